// Package examples holds the cluster examples (Slurm, Kubernetes); its test
// keeps them consistent with each other and with ratesweep's flags.
package examples

import (
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type job struct {
	Kind string `yaml:"kind"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy  string      `yaml:"restartPolicy"`
				InitContainers []container `yaml:"initContainers"`
				Containers     []container `yaml:"containers"`
				Volumes        []struct {
					Name string `yaml:"name"`
					PVC  struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
}

type container struct {
	Args []string `yaml:"args"`
	Env  []struct {
		Name, Value string
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

func jobs(t *testing.T, path string) map[string]job {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]job{}
	dec := yaml.NewDecoder(f)
	for {
		var j job
		if err := dec.Decode(&j); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", path, err)
		}
		out[j.Kind+"/"+j.Metadata.Name] = j
	}
}

func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// The Indexed Job's shard count, run directory and volume match the merge Job's.
func TestKubernetesJobsAgree(t *testing.T) {
	sweep := jobs(t, "k8s/sweep-job.yaml")["Job/ratesweep-sweep"]
	merge := jobs(t, "k8s/merge-job.yaml")["Job/ratesweep-merge"]
	if _, ok := jobs(t, "k8s/sweep-job.yaml")["PersistentVolumeClaim/ratesweep-runs"]; !ok {
		t.Fatal("sweep-job.yaml: no PersistentVolumeClaim ratesweep-runs")
	}
	ss := sweep.Spec
	if ss.CompletionMode != "Indexed" || ss.Completions < 2 || ss.Template.Spec.RestartPolicy != "Never" {
		t.Fatalf("sweep job: %+v", ss)
	}
	shard := ss.Template.Spec.Containers[0]
	shards := ""
	for _, e := range shard.Env {
		if e.Name == "RATESWEEP_SHARDS" {
			shards = e.Value
		}
	}
	if shards != strconv.Itoa(ss.Completions) {
		t.Fatalf("RATESWEEP_SHARDS=%q, completions %d", shards, ss.Completions)
	}
	if shard.Args[0] != "run" || !slices.Contains(shard.Args, "--resume") {
		t.Fatalf("shard args %v: want run ... --resume", shard.Args)
	}
	mc := merge.Spec.Template.Spec.InitContainers[0]
	if mc.Args[0] != "merge" || flag(mc.Args, "--shards") != shards || mc.Args[len(mc.Args)-1] != flag(shard.Args, "--out") {
		t.Fatalf("merge args %v do not match shard args %v (RATESWEEP_SHARDS=%s)", mc.Args, shard.Args, shards)
	}
	rc := merge.Spec.Template.Spec.Containers[0]
	if rc.Args[0] != "report" || rc.Args[1] != flag(shard.Args, "--out") {
		t.Fatalf("report args %v", rc.Args)
	}
	for _, j := range []job{sweep, merge} {
		v := j.Spec.Template.Spec.Volumes
		if len(v) != 1 || v[0].PVC.ClaimName != "ratesweep-runs" {
			t.Fatalf("%s: volumes %+v", j.Metadata.Name, v)
		}
	}
	for _, c := range []container{shard, mc, rc} {
		if len(c.VolumeMounts) != 1 || !strings.HasPrefix(flag(shard.Args, "--out"), c.VolumeMounts[0].MountPath+"/") {
			t.Fatalf("%v: mounts %+v", c.Args, c.VolumeMounts)
		}
	}
}

// The Slurm script resumes (a requeued task finishes what is missing) and
// the submit script queues merge and report after every task succeeded.
func TestSlurmExamples(t *testing.T) {
	sb, err := os.ReadFile("slurm/sweep.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := os.ReadFile("slurm/submit.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=", `run "$spec" --out "$out"`, "--resume"} {
		if !strings.Contains(string(sb), want) {
			t.Errorf("sweep.sbatch lacks %q", want)
		}
	}
	for _, want := range []string{"--dependency=\"afterok:$array\"", "merge --shards $shards", "report"} {
		if !strings.Contains(string(sub), want) {
			t.Errorf("submit.sh lacks %q", want)
		}
	}
}
