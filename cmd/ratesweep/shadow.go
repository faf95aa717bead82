package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// cmdShadow compares an nginx dry-run access log ($limit_req_status, and
// $msec for exact times, as in the log_format of ratesweep export --to
// nginx) with the model's decisions for the same policy.
func cmdShadow(e *env, args []string) error {
	fs := newFlags(e, "shadow", "LOG POLICY",
		"Compare the decisions an nginx dry run logged ($limit_req_status, limit_req_dry_run on) with the model's\n"+
			"for POLICY on the same requests, key by key: where ratesweep's model and the proxy differ.")
	key := fs.String("key", "ip", "what the limit hangs on: ip, user, path_prefix, global or header:NAME (the quoted value after $msec that export --to nginx --key header:NAME logs)")
	maxMemory := fs.String("max-memory", "", "stop reading a log whose requests and keys, counted as they are read, need more memory than this (e.g. 4GiB; 0 = no limit; default 3/4 of the least of RAM, cgroup limit and ulimit -v)")
	rest, err := parseFlags(fs, args, 64)
	if err != nil {
		return err
	}
	memLimit := sweep.DefaultMaxMemory()
	if *maxMemory != "" {
		if memLimit, err = yamlx.ParseBytes(*maxMemory); err != nil {
			return usagef("shadow: --max-memory: %v", err)
		}
	}
	if len(rest) < 2 {
		return usagef("shadow: expected LOG POLICY, e.g. ratesweep shadow access.log 'nginx rate=10 burst=20 delay=20'")
	}
	p, err := model.ParseLabel(strings.Join(rest[1:], " "))
	if err != nil {
		return usagef("shadow: %v", err)
	}
	f, err := os.Open(rest[0])
	if err != nil {
		return &badInput{err}
	}
	defer f.Close()
	res, err := export.Shadow(f, p, export.ShadowOptions{Key: *key, MaxMemory: memLimit})
	if err != nil {
		if strings.HasPrefix(err.Error(), "--key: ") {
			return usagef("shadow: %v", err)
		}
		return &badInput{fmt.Errorf("%s: %v", rest[0], err)}
	}
	return export.WriteShadow(e.stdout, p, res)
}
