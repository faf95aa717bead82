package main

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// peersConfig is bench/peers/lesson.json, what the Node and numpy peers read.
type peersConfig struct {
	Duration int `json:"duration_s" yaml:"duration_s"`
	Clients  []struct {
		Name     string       `json:"name" yaml:"name"`
		Class    string       `json:"class" yaml:"class"`
		Segments [][3]float64 `json:"segments" yaml:"segments"`
	} `json:"clients" yaml:"clients"`
	Grids map[string]struct {
		Window   []float64 `json:"window_s"`
		Limit    []float64 `json:"limit"`
		Rate     []float64 `json:"rate"`
		Capacity []float64 `json:"capacity"`
	} `json:"grids"`
}

// TestPeersMatchConfigs: the peers' scenario is configs/lesson.yaml and their
// grids are configs/bench.yaml's and configs/bench-large.yaml's, so that the
// checksums of the bench table compare like with like.
func TestPeersMatchConfigs(t *testing.T) {
	var peers peersConfig
	b, err := os.ReadFile("peers/lesson.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &peers); err != nil {
		t.Fatal(err)
	}
	var lesson peersConfig
	b, err = os.ReadFile("../configs/lesson.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &lesson); err != nil {
		t.Fatal(err)
	}
	if peers.Duration != lesson.Duration || !reflect.DeepEqual(peers.Clients, lesson.Clients) {
		t.Errorf("bench/peers/lesson.json's scenario differs from configs/lesson.yaml:\n%+v\n%+v", peers, lesson)
	}

	type param struct {
		From, To, Step float64
		List           []float64
	}
	type spec struct {
		Sweep []map[string]yaml.Node
	}
	values := func(n yaml.Node) []float64 {
		var list []float64
		if n.Decode(&list) == nil {
			return list
		}
		var p param
		if err := n.Decode(&p); err != nil || p.Step != 1 {
			t.Fatalf("parameter %v: want a list or {from, to, step: 1}", n.Value)
		}
		return []float64{p.From, p.To}
	}
	for grid, file := range map[string]string{"bench": "../configs/bench.yaml", "large": "../configs/bench-large.yaml"} {
		var s spec
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		g := peers.Grids[grid]
		if len(s.Sweep) != 3 {
			t.Fatalf("%s: %d sweep entries, want 3", file, len(s.Sweep))
		}
		for _, e := range s.Sweep {
			var algo string
			n := e["algorithm"]
			n.Decode(&algo)
			switch algo {
			case "fixed_window", "sliding_window":
				win := values(e["window_s"])
				if !reflect.DeepEqual(win, g.Window) || !reflect.DeepEqual(values(e["limit"]), g.Limit) {
					t.Errorf("%s %s: window_s %v limit %v; lesson.json: %v %v", file, algo, win, values(e["limit"]), g.Window, g.Limit)
				}
			case "token_bucket":
				if !reflect.DeepEqual(values(e["rate"]), g.Rate) || !reflect.DeepEqual(values(e["capacity"]), g.Capacity) {
					t.Errorf("%s token_bucket: rate %v capacity %v; lesson.json: %v %v", file, values(e["rate"]), values(e["capacity"]), g.Rate, g.Capacity)
				}
			default:
				t.Errorf("%s: unexpected algorithm %q", file, algo)
			}
		}
	}
}
