package main

import (
	"errors"
	"io"
	"strings"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

func cmdExport(e *env, args []string) error {
	fs := newFlags(e, "export", "--to TARGET [--run RUN_DIR] POLICY",
		"Write a policy (its label, e.g. 'sliding_counter window_s=10 limit=50', as in the points column policy)\n"+
			"in a proxy's own configuration: "+strings.Join(export.Targets, ", ")+".\n"+
			"Where the target cannot express the policy, the nearest policy it can express is exported;\n"+
			"with --run, that is the run's point closest in false cut and missed, with both points' metrics.")
	to := fs.String("to", "", "target: "+strings.Join(export.Targets, " | "))
	runDir := fs.String("run", "", "run directory whose metrics choose and describe the exported policy")
	key := fs.String("key", "", "what the limit hangs on: ip | header:NAME | global (default: from the policy's key)")
	nodes := fs.Int("nodes", 1, "replicas enforcing the limit; targets with local state get 1/N of it each")
	zone := fs.String("zone", "ratesweep", "name of the zone, table, domain or key prefix")
	plan := fs.String("plan", "", "--to cloudflare: the plan the rule must fit: "+strings.Join(export.CloudflarePlans(), " | ")+" (default: the smallest that holds it, named in the output)")
	allowIncomplete := fs.Bool("allow-incomplete", false, "with --run: read a run without manifest.json, or with NULL or NaN metrics, instead of refusing it")
	rest, err := parseFlags(fs, args, 64)
	if err != nil {
		return err
	}
	if *to == "" {
		return usagef("export: --to is required (%s)", strings.Join(export.Targets, ", "))
	}
	if len(rest) == 0 {
		return usagef("export: expected a POLICY, e.g. 'sliding_counter window_s=10 limit=50'")
	}
	if *nodes < 1 {
		return usagef("export: --nodes must be >= 1, got %d", *nodes)
	}
	p, err := model.ParseLabel(strings.Join(rest, " "))
	if err != nil {
		return usagef("export: %v", err)
	}
	o := export.Options{Key: *key, Nodes: *nodes, Zone: *zone, Plan: *plan}
	var run []*export.Point
	if *runDir != "" {
		if run, err = export.ReadRun(e.ctx, *runDir, sweep.OpenOptions{AllowIncomplete: *allowIncomplete}); err != nil {
			var ie *sweep.InputError
			if errors.As(err, &ie) {
				return &badInput{err}
			}
			return err
		}
	}
	res, asked, exported, err := export.NearestIn(p, *to, run, o)
	if err != nil {
		return usagef("export: %v", err)
	}
	if export.CommentsInline(res.Target) {
		return export.Write(e.stdout, res, asked, exported, *runDir)
	}
	// A JSON document has no comments: the header goes to stderr, stdout
	// gets the document alone.
	var b strings.Builder
	if err := export.Write(&b, res, asked, exported, *runDir); err != nil {
		return err
	}
	header, doc, _ := strings.Cut(b.String(), "\n\n")
	if _, err := io.WriteString(e.stderr, header+"\n"); err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, doc)
	return err
}
