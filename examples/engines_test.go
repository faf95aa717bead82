package examples

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// knownFlags fails for a --flag of args that the command's help (the
// golden help text) does not list.
func knownFlags(t *testing.T, args []string) {
	t.Helper()
	help, err := os.ReadFile("../cmd/ratesweep/testdata/help/" + args[0] + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--") && !regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(a)+`\b`).Match(help) {
			t.Errorf("%s %s: not a flag of ratesweep %s", args[0], a, args[0])
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The AWS Batch example: an array job of key shards whose size is the
// RATESWEEP_SHARDS of the job definition and the merge's --shards, the
// merge depending on the array job, every command one of ratesweep's.
func TestAWSBatchExample(t *testing.T) {
	var def struct {
		JobDefinitionName    string   `json:"jobDefinitionName"`
		Type                 string   `json:"type"`
		PlatformCapabilities []string `json:"platformCapabilities"`
		RetryStrategy        struct {
			Attempts int `json:"attempts"`
		} `json:"retryStrategy"`
		Timeout struct {
			AttemptDurationSeconds int `json:"attemptDurationSeconds"`
		} `json:"timeout"`
		ContainerProperties struct {
			Image       string   `json:"image"`
			Command     []string `json:"command"`
			Environment []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"environment"`
			ResourceRequirements []struct {
				Type  string `json:"type"`
				Value string `json:"value"`
			} `json:"resourceRequirements"`
			Volumes []struct {
				Name string `json:"name"`
				EFS  struct {
					FileSystemID      string `json:"fileSystemId"`
					TransitEncryption string `json:"transitEncryption"`
				} `json:"efsVolumeConfiguration"`
			} `json:"volumes"`
			MountPoints []struct {
				SourceVolume  string `json:"sourceVolume"`
				ContainerPath string `json:"containerPath"`
				ReadOnly      bool   `json:"readOnly"`
			} `json:"mountPoints"`
		} `json:"containerProperties"`
	}
	type submit struct {
		JobName         string `json:"jobName"`
		JobQueue        string `json:"jobQueue"`
		JobDefinition   string `json:"jobDefinition"`
		ArrayProperties *struct {
			Size int `json:"size"`
		} `json:"arrayProperties"`
		DependsOn []struct {
			JobID string `json:"jobId"`
		} `json:"dependsOn"`
		ContainerOverrides *struct {
			Command []string `json:"command"`
		} `json:"containerOverrides"`
	}
	var sweep, merge submit
	readJSON(t, "aws-batch/job-definition.json", &def)
	readJSON(t, "aws-batch/sweep-job.json", &sweep)
	readJSON(t, "aws-batch/merge-job.json", &merge)
	cp := def.ContainerProperties
	shards := ""
	for _, e := range cp.Environment {
		if e.Name == "RATESWEEP_SHARDS" {
			shards = e.Value
		}
	}
	if sweep.ArrayProperties == nil || strconv.Itoa(sweep.ArrayProperties.Size) != shards || sweep.ArrayProperties.Size < 2 {
		t.Fatalf("array size %+v, RATESWEEP_SHARDS %q", sweep.ArrayProperties, shards)
	}
	if sweep.JobDefinition != def.JobDefinitionName || merge.JobDefinition != def.JobDefinitionName || sweep.JobQueue != merge.JobQueue {
		t.Errorf("job definitions %q, %q (registered %q); queues %q, %q", sweep.JobDefinition, merge.JobDefinition, def.JobDefinitionName, sweep.JobQueue, merge.JobQueue)
	}
	c := cp.Command
	if c[0] != "run" || flag(c, "--shard-by") != "key" || !strings.Contains(strings.Join(c, " "), "--resume") || flag(c, "--shard") != "" {
		t.Errorf("shard command %v: want run ... --shard-by key --resume, the shard from AWS_BATCH_JOB_ARRAY_INDEX", c)
	}
	knownFlags(t, c)
	if len(merge.DependsOn) != 1 || merge.ArrayProperties != nil || merge.ContainerOverrides == nil {
		t.Fatalf("merge job: %+v", merge)
	}
	m := merge.ContainerOverrides.Command
	if m[0] != "merge" || flag(m, "--shards") != shards || m[len(m)-1] != flag(c, "--out") {
		t.Errorf("merge command %v for shard command %v", m, c)
	}
	knownFlags(t, m)
	if len(cp.MountPoints) != 1 || len(cp.Volumes) != 1 || cp.MountPoints[0].SourceVolume != cp.Volumes[0].Name ||
		!strings.HasPrefix(flag(c, "--out"), cp.MountPoints[0].ContainerPath+"/") || cp.MountPoints[0].ReadOnly {
		t.Errorf("the run directory %s is not on the shared volume: %+v %+v", flag(c, "--out"), cp.Volumes, cp.MountPoints)
	}
	sh, err := os.ReadFile("aws-batch/submit.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"register-job-definition", "job-definition.json", "sweep-job.json", "merge-job.json", ".dependsOn[0].jobId = $id"} {
		if !strings.Contains(string(sh), want) {
			t.Errorf("submit.sh lacks %q", want)
		}
	}
}

// The Argo example: a Workflow whose first step fans out withSequence over
// the shard count, each item one key shard, then merge and report steps on
// the same run directory and volume.
func TestArgoWorkflow(t *testing.T) {
	type ctr struct {
		Image        string   `yaml:"image"`
		Args         []string `yaml:"args"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	type param struct{ Name, Value string }
	type step struct {
		Name      string `yaml:"name"`
		Template  string `yaml:"template"`
		Arguments struct {
			Parameters []param `yaml:"parameters"`
		} `yaml:"arguments"`
		WithSequence *struct {
			Count string `yaml:"count"`
		} `yaml:"withSequence"`
	}
	var wf struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Entrypoint string `yaml:"entrypoint"`
			Arguments  struct {
				Parameters []param `yaml:"parameters"`
			} `yaml:"arguments"`
			Volumes []struct {
				Name string `yaml:"name"`
			} `yaml:"volumes"`
			Templates []struct {
				Name   string     `yaml:"name"`
				Steps  [][]step   `yaml:"steps"`
				Inputs yaml.Node  `yaml:"inputs"`
				Retry  *yaml.Node `yaml:"retryStrategy"`
				C      *ctr       `yaml:"container"`
			} `yaml:"templates"`
		} `yaml:"spec"`
	}
	data, err := os.ReadFile("argo/sweep-workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if wf.APIVersion != "argoproj.io/v1alpha1" || wf.Kind != "Workflow" || len(wf.Spec.Volumes) != 1 {
		t.Fatalf("%s %s, volumes %+v", wf.APIVersion, wf.Kind, wf.Spec.Volumes)
	}
	params := map[string]string{}
	for _, p := range wf.Spec.Arguments.Parameters {
		params[p.Name] = p.Value
	}
	subst := func(s string, local map[string]string) string {
		return regexp.MustCompile(`\{\{(workflow|inputs)\.parameters\.(\w+)\}\}`).ReplaceAllStringFunc(s, func(m string) string {
			p := regexp.MustCompile(`\{\{(workflow|inputs)\.parameters\.(\w+)\}\}`).FindStringSubmatch(m)
			if p[1] == "workflow" {
				return params[p[2]]
			}
			return local[p[2]]
		})
	}
	tmpl := map[string]*ctr{}
	var main [][]step
	for _, tp := range wf.Spec.Templates {
		if tp.Name == wf.Spec.Entrypoint {
			main = tp.Steps
		}
		if tp.C != nil {
			tmpl[tp.Name] = tp.C
			if len(tp.C.VolumeMounts) != 1 || tp.C.VolumeMounts[0].Name != wf.Spec.Volumes[0].Name {
				t.Errorf("template %s: mounts %+v", tp.Name, tp.C.VolumeMounts)
			}
		}
	}
	if len(main) != 3 || len(main[0]) != 1 || main[0][0].WithSequence == nil {
		t.Fatalf("entrypoint steps %+v: want a withSequence fan-out, then merge, then report", main)
	}
	fan := main[0][0]
	n, err := strconv.Atoi(subst(fan.WithSequence.Count, nil))
	if err != nil || n < 2 {
		t.Fatalf("withSequence count %q: %v", fan.WithSequence.Count, err)
	}
	out := params["out"]
	for i := range n { // each item as Argo expands it
		local := map[string]string{}
		for _, p := range fan.Arguments.Parameters {
			local[p.Name] = strings.ReplaceAll(p.Value, "{{item}}", strconv.Itoa(i))
		}
		var args []string
		for _, a := range tmpl[fan.Template].Args {
			args = append(args, subst(a, local))
		}
		if args[0] != "run" || flag(args, "--shard") != strconv.Itoa(i)+"/"+strconv.Itoa(n) || flag(args, "--shard-by") != "key" || flag(args, "--out") != out {
			t.Fatalf("item %d: %v", i, args)
		}
		knownFlags(t, args)
	}
	merge, report := tmpl[main[1][0].Template], tmpl[main[2][0].Template]
	margs := strings.Fields(subst(strings.Join(merge.Args, " "), nil))
	if margs[0] != "merge" || flag(margs, "--shards") != strconv.Itoa(n) || margs[len(margs)-1] != out {
		t.Errorf("merge %v", margs)
	}
	knownFlags(t, margs)
	if report.Args[0] != "report" || subst(report.Args[1], nil) != out {
		t.Errorf("report %v", report.Args)
	}
	if !strings.HasPrefix(out, tmpl[fan.Template].VolumeMounts[0].MountPath+"/") {
		t.Errorf("run directory %s is not on the volume", out)
	}
}
