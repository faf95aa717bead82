package main

func cmdReport(e *env, args []string) error { return usagef("report: not built yet") }
func cmdCheck(e *env, args []string) error  { return usagef("check: not built yet") }
