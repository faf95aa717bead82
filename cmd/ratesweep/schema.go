package main

import (
	"github.com/ratesweep/ratesweep/sweep"
)

func cmdSchema(e *env, args []string) error {
	fs := newFlags(e, "schema", "[spec | scenario]",
		"Print the JSON Schema of sweep specs (default) or of scenario files, generated from the decoder's own field lists.\n"+
			"configs/ratesweep.schema.json and configs/scenario.schema.json are these; a spec names one in its first line for\n"+
			"editors (VS Code YAML, JetBrains) to complete and check it: # yaml-language-server: $schema=PATH")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	kind := "spec"
	if len(rest) == 1 {
		kind = rest[0]
	}
	b, err := sweep.Schema(kind)
	if err != nil {
		return usagef("schema: %v", err)
	}
	_, err = e.stdout.Write(b)
	return err
}
