package main

import (
	"errors"
	"fmt"
	"io"
	"math"
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
	maxDrift := fs.Float64("max-drift", -1, "with --run: exit 1 when the exported policy cuts legitimate requests or misses abuse more than this many percentage points off the asked policy (default: never)")
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
	if fs.Changed("max-drift") && (*runDir == "" || !(*maxDrift >= 0)) {
		return usagef("export: --max-drift takes percentage points >= 0 and needs --run")
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
	drift := exportDrift(e, asked, exported, *maxDrift)
	if export.CommentsInline(res.Target) {
		if err := export.Write(e.stdout, res, asked, exported, *runDir); err != nil {
			return err
		}
		return drift
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
	if _, err = io.WriteString(e.stdout, doc); err != nil {
		return err
	}
	return drift
}

// exportDrift says on stderr what exporting the run's point exported
// instead of asked costs, in percentage points of legitimate requests cut
// and of abuse missed, and returns an error (exit 1) when either is beyond
// maxDrift (>= 0; negative: never).
func exportDrift(e *env, asked, exported *export.Point, maxDrift float64) error {
	if asked == nil || exported == nil || exported.Label == asked.Label {
		return nil
	}
	dc, dm := exported.LegitCutPct()-asked.LegitCutPct(), exported.MissedPct()-asked.MissedPct()
	fmt.Fprintf(escapeWriter{e.stderr}, "ratesweep: export: %s is exported as %s: %+.2f points of legitimate requests cut, %+.2f points of abuse missed\n",
		asked.Label, exported.Label, dc, dm)
	if maxDrift >= 0 && (math.Abs(dc) > maxDrift || math.Abs(dm) > maxDrift) {
		return fmt.Errorf("export: the exported policy is %+.2f / %+.2f points off the asked one, beyond --max-drift %g", dc, dm, maxDrift)
	}
	return nil
}
