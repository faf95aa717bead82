package main

import (
	"fmt"
	"strconv"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/sweep"
)

// engine is a batch scheduler that starts array tasks: the environment
// variable holding a task's index (0-based unless Slurm says otherwise) and
// the one holding the task count, where the engine sets one
// (docs/clusters.md).
type engine struct {
	name  string
	index string // the task's index
	count string // the task count, or "" (then --shards or RATESWEEP_SHARDS)
}

// engines are read in this order; the first whose index variable is set
// gives the shard. Slurm is read apart (slurmShard): its count may come
// from the array's bounds.
var engines = []engine{
	{"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", ""},
	{"AWS Batch array job", "AWS_BATCH_JOB_ARRAY_INDEX", ""},
	{"Google Cloud Batch", "BATCH_TASK_INDEX", "BATCH_TASK_COUNT"},
	{"Cloud Run job", "CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT"},
	{"Nomad", "NOMAD_ALLOC_INDEX", ""},
}

// shardFromEnv picks the shard: the flag, else the scheduler's variables
// (Slurm, then engines), else 0/1. shards is --shards (0: not given).
func shardFromEnv(flag string, shards int, getenv func(string) string) (sweep.Shard, error) {
	if flag != "" {
		s, err := sweep.ParseShard(flag)
		if err == nil {
			err = sweep.CheckShardCount(s.Count)
		}
		if err != nil {
			return s, usagef("run: --shard %s: expected I/N with 0 <= I < N <= %d, e.g. 0/4", yamlx.Excerpt(flag), sweep.MaxShards)
		}
		return s, nil
	}
	atoi := func(name string) (int, bool, error) {
		v := getenv(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false, usagef("run: %s=%s is not a number", name, yamlx.Excerpt(v))
		}
		return n, true, nil
	}
	if s, ok, err := slurmShard(atoi); ok || err != nil {
		return s, err
	}
	for _, en := range engines {
		id, ok, err := atoi(en.index)
		if err != nil {
			return sweep.Shard{}, err
		}
		if !ok {
			continue
		}
		n := shards
		if n == 0 && en.count != "" {
			if v, has, err := atoi(en.count); err != nil {
				return sweep.Shard{}, err
			} else if has {
				n = v
			}
		}
		if n == 0 {
			if v, has, err := atoi("RATESWEEP_SHARDS"); err != nil {
				return sweep.Shard{}, err
			} else if has {
				n = v
			}
		}
		if n == 0 {
			from := ""
			if en.count != "" {
				from = fmt.Sprintf(" (%s is not set)", en.count)
			}
			return sweep.Shard{}, usagef("run: %s is set (%s): give the shard count with --shards N or RATESWEEP_SHARDS%s", en.index, en.name, from)
		}
		s := sweep.Shard{Index: id, Count: n}
		if _, err := sweep.ParseShard(s.String()); err != nil {
			return s, usagef("run: shard from %s: %v", en.index, err)
		}
		return s, nil
	}
	return sweep.Shard{Index: 0, Count: 1}, nil
}

// slurmShard is the shard of a Slurm array task: SLURM_ARRAY_TASK_ID less
// SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT (or MAX − MIN + 1) tasks;
// ok is false outside an array job.
func slurmShard(atoi func(string) (int, bool, error)) (s sweep.Shard, ok bool, err error) {
	id, ok, err := atoi("SLURM_ARRAY_TASK_ID")
	if err != nil || !ok {
		return s, false, err
	}
	count, hasCount, err := atoi("SLURM_ARRAY_TASK_COUNT")
	if err != nil {
		return s, true, err
	}
	lo, hasMin, err := atoi("SLURM_ARRAY_TASK_MIN")
	if err != nil {
		return s, true, err
	}
	hi, hasMax, err := atoi("SLURM_ARRAY_TASK_MAX")
	if err != nil {
		return s, true, err
	}
	if !hasMin {
		lo = 0
	}
	if !hasCount && hasMax {
		count, hasCount = hi-lo+1, true
	}
	if !hasCount {
		return s, true, usagef("run: SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MAX")
	}
	s = sweep.Shard{Index: id - lo, Count: count}
	if _, err := sweep.ParseShard(s.String()); err != nil {
		return s, true, usagef("run: shard from Slurm: %v", err)
	}
	return s, true, nil
}
