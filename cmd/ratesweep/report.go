package main

func cmdReport(e *env, args []string) error { return usagef("report: not built yet") }
