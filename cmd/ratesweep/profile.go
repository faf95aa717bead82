package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
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
