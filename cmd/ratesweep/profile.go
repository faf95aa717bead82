package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/ratesweep/ratesweep/sweep"
)

// startProfiles starts the profiles asked for by RATESWEEP_CPUPROFILE and
// RATESWEEP_MEMPROFILE (file paths, read with `go tool pprof`) and returns
// the function that writes and closes them. They are for measuring
// ratesweep itself, so they are environment variables rather than flags.
func startProfiles(getenv func(string) string) (stop func()) {
	var stops []func()
	if path := getenv("RATESWEEP_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ratesweep: RATESWEEP_CPUPROFILE: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := getenv("RATESWEEP_MEMPROFILE"); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "ratesweep: RATESWEEP_MEMPROFILE: %v\n", err)
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// writerFloor is run with RATESWEEP_WRITER_FLOOR set, for `make bench`:
// instead of the run, it measures the Parquet writer's floor on the same
// spec, directory and workers (sweep.WriterFloor: pqarrow writing the same
// records, the time spent building them taken out) and prints its JSON
// line. It lives in this binary so that the floor and the run it is
// compared with execute the same build of pqarrow: builds of the same code
// into other binaries differed by 5% in its encoders alone. The directory
// is not a complete run (no manifest).
func writerFloor(e *env, spec *sweep.Spec, opts sweep.Options) error {
	res, st, err := sweep.WriterFloor(e.ctx, spec, opts)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(st.Report(res))
}
