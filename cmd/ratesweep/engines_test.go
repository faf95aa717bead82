package main

import (
	"errors"
	"strings"
	"testing"
)

// Every engine's index variable gives the shard, with its count variable
// where the engine sets one, else --shards or RATESWEEP_SHARDS; a missing
// count or a bad value is a usage error naming the variable.
func TestShardFromEngineVariables(t *testing.T) {
	for _, en := range engines {
		t.Run(en.index, func(t *testing.T) {
			run := func(shards int, env map[string]string) (string, error) {
				s, err := shardFromEnv("", shards, func(k string) string { return env[k] })
				return s.String(), err
			}
			if got, err := run(5, map[string]string{en.index: "3"}); err != nil || got != "3/5" {
				t.Errorf("--shards 5: %s, %v; want 3/5", got, err)
			}
			if got, err := run(0, map[string]string{en.index: "0", "RATESWEEP_SHARDS": "2"}); err != nil || got != "0/2" {
				t.Errorf("RATESWEEP_SHARDS=2: %s, %v; want 0/2", got, err)
			}
			if en.count != "" {
				if got, err := run(0, map[string]string{en.index: "6", en.count: "7"}); err != nil || got != "6/7" {
					t.Errorf("%s=7: %s, %v; want 6/7", en.count, got, err)
				}
				if got, err := run(9, map[string]string{en.index: "6", en.count: "7"}); err != nil || got != "6/9" {
					t.Errorf("--shards 9 beside %s=7: %s, %v; want 6/9 (the flag wins)", en.count, got, err)
				}
			}
			for _, bad := range []map[string]string{
				{en.index: "1"},
				{en.index: "x", "RATESWEEP_SHARDS": "4"},
				{en.index: "4", "RATESWEEP_SHARDS": "4"},
				{en.index: "-1", "RATESWEEP_SHARDS": "4"},
			} {
				_, err := run(0, bad)
				var ue *usageError
				if !errors.As(err, &ue) {
					t.Errorf("%v: err %v, want a usage error", bad, err)
				}
			}
			_, err := run(0, map[string]string{en.index: "1"})
			if err == nil || !strings.Contains(err.Error(), en.index) || !strings.Contains(err.Error(), "--shards") {
				t.Errorf("no count: %v, want one naming %s and --shards", err, en.index)
			}
			if got, err := run(0, map[string]string{en.index: "2", "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "RATESWEEP_SHARDS": "4"}); err != nil || got != "1/3" {
				t.Errorf("Slurm beside %s: %s, %v; want Slurm's 1/3", en.index, got, err)
			}
			if got, err := run(0, map[string]string{en.index: "2", "RATESWEEP_SHARDS": "4"}); err != nil || got != "2/4" {
				t.Errorf("%s=2: %s, %v", en.index, got, err)
			}
		})
	}
	if got, err := shardFromEnv("", 0, func(string) string { return "" }); err != nil || got.String() != "0/1" {
		t.Errorf("no variables: %s, %v; want 0/1", got, err)
	}
}
