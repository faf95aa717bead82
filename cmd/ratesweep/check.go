package main

func cmdCheck(e *env, args []string) error { return usagef("check: not built yet") }
