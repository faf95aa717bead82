package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

func TestRunCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lesson")
	code, out, stderr := runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", dir, "--workers", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "14 points") || !strings.Contains(out, filepath.Join(dir, "manifest.json")) {
		t.Errorf("output: %q", out)
	}
	// An existing run is refused without --force or --resume (exit 2, file untouched).
	before, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	code, _, stderr = runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", dir)
	if code != 2 || !strings.Contains(stderr, "--resume") {
		t.Errorf("rerun: exit %d, %q", code, stderr)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if string(before) != string(after) {
		t.Error("a refused run changed the manifest")
	}
	code, out, _ = runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", dir, "--resume")
	if code != 0 || !strings.Contains(out, "resumed: 1 of 1 parts") {
		t.Errorf("resume: exit %d, %q", code, out)
	}
	rows, err := sweep.ReadPoints(t.Context(), dir)
	if err != nil || len(rows) != 14 {
		t.Errorf("rows %d, err %v", len(rows), err)
	}
}

func TestRunDryRun(t *testing.T) {
	code, out, stderr := runCLI(t, "run", "--dry-run", "--out", filepath.Join(t.TempDir(), "x"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	spec, err := sweep.LoadSpec("")
	if err != nil {
		t.Fatal(err)
	}
	points := fmt.Sprintf("points      %d (× 1 replicates = %d points rows, %d clients rows)", spec.Points(), spec.Points(), spec.Points()*7)
	for _, want := range []string{points, "estimated", "entry 9     concurrency: 28 points"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunBadUsage(t *testing.T) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "s.yaml")
	os.WriteFile(spec, []byte("name: s\nscenario: nope.yaml\nsweep: []\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--shard", "3/2"}, "shard"},
		{[]string{"run", "--shard", "0/0"}, "shard"},
		{[]string{"run", "--workers", "0"}, "--workers"},
		{[]string{"run", "--resume", "--force"}, "exclude"},
		{[]string{"run", spec}, "nope.yaml"},
		{[]string{"run", filepath.Join(tmp, "missing.yaml")}, "missing.yaml: no such file"},
		{[]string{"run", "--max-points", "10", "--out", filepath.Join(tmp, "o")}, "--max-points"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", c.args, code, stderr, c.want)
		}
	}
}

func TestShardFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cases := []struct {
		kv     map[string]string
		shards int
		want   string
		bad    bool
	}{
		{nil, 0, "0/1", false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, "2/4", false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_MAX": "6"}, 0, "2/4", false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2"}, 0, "", true},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, 3, "1/3", false},
		{map[string]string{"JOB_COMPLETION_INDEX": "1", "RATESWEEP_SHARDS": "2"}, 0, "1/2", false},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, 0, "", true},
		{map[string]string{"JOB_COMPLETION_INDEX": "4"}, 4, "", true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, "", true},
	}
	for _, c := range cases {
		s, err := shardFromEnv("", c.shards, env(c.kv))
		if c.bad != (err != nil) || (!c.bad && s.String() != c.want) {
			t.Errorf("%v: got %v, %v; want %q bad=%v", c.kv, s, err, c.want, c.bad)
		}
	}
	if s, err := shardFromEnv("1/2", 0, env(map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4"})); err != nil || s.String() != "1/2" {
		t.Errorf("--shard must win over the environment: %v %v", s, err)
	}
}

// TestRunWriterFloor: with RATESWEEP_WRITER_FLOOR set, run measures the
// writer's floor instead (make bench): one JSON line whose points and Σ
// false cut are the run's, with positive CPU figures, and the same part
// files as the run (no manifest).
func TestRunWriterFloor(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", filepath.Join(dir, "run"))
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, floorOut, stderr := runCLIEnv(t, map[string]string{"RATESWEEP_WRITER_FLOOR": "1"},
		"run", "../../configs/lesson-sweep.yaml", "--out", filepath.Join(dir, "floor"), "--workers", "2")
	if code != 0 {
		t.Fatalf("floor: exit %d: %s", code, stderr)
	}
	var rep struct {
		Points   int64   `json:"points"`
		Checksum float64 `json:"checksum"`
		CPU      float64 `json:"cpu_s"`
		Process  float64 `json:"process_cpu_s"`
	}
	if err := json.Unmarshal([]byte(floorOut), &rep); err != nil {
		t.Fatalf("floor output %q: %v", floorOut, err)
	}
	m := regexp.MustCompile(`Σ false cut = (\d+)`).FindStringSubmatch(out)
	if m == nil || rep.Points != 14 || fmt.Sprint(int64(rep.Checksum)) != m[1] || rep.CPU <= 0 || rep.Process < rep.CPU {
		t.Errorf("floor %+v, run output %q", rep, out)
	}
	for _, sub := range []string{"points", "clients"} {
		if _, err := os.Stat(filepath.Join(dir, "floor", sub, "part-000000.parquet")); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "floor", "manifest.json")); err == nil {
		t.Error("the floor wrote a manifest")
	}
}
