package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// cmdShadow compares the decisions a proxy logged (an nginx dry run's
// $limit_req_status, HAProxy's deny status, envoy's RL response flag) with
// the model's decisions for the same policy on the logged times.
func cmdShadow(e *env, args []string) error {
	fs := newFlags(e, "shadow", "LOG POLICY",
		"Compare the decisions a proxy logged with the model's for POLICY on the same requests and times, key by key:\n"+
			"where ratesweep's model and the proxy differ. nginx: a dry run's $limit_req_status (limit_req_dry_run on);\n"+
			"HAProxy: option httplog, the deny rule's status; envoy: the default access log, response flag RL.")
	proxy := fs.String("proxy", "", "the proxy that wrote LOG: nginx, haproxy or envoy (default: detected from the log's format; nginx unless it is HAProxy's or envoy's)")
	key := fs.String("key", "", "what the limit hangs on: ip, user, path_prefix, global or header:NAME (nginx: the quoted value after $msec that export --to nginx --key header:NAME logs); default ip")
	denyStatus := fs.Int("deny-status", 429, "HAProxy: the status of the deny rule (its deny_status)")
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
	if *proxy != "" && !slices.Contains(export.ShadowProxies, *proxy) {
		return usagef("shadow: --proxy: %q is not nginx, haproxy or envoy", *proxy)
	}
	if *denyStatus < 100 || *denyStatus > 599 {
		return usagef("shadow: --deny-status: %d is not an HTTP status (100..599)", *denyStatus)
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
	res, err := export.Shadow(f, p, export.ShadowOptions{Proxy: *proxy, Key: *key, DenyStatus: *denyStatus, MaxMemory: memLimit})
	if err != nil {
		if strings.HasPrefix(err.Error(), "--key: ") {
			return usagef("shadow: %v", err)
		}
		return &badInput{fmt.Errorf("%s: %v", rest[0], err)}
	}
	return export.WriteShadow(e.stdout, p, res)
}
