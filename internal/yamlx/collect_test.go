package yamlx

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	params := []string{"window_s", "limit", "rate", "capacity", "phase_s", "burst", "delay", "service_s"}
	algs := []string{"fixed_window", "sliding_window", "token_bucket", "sliding_log", "gcra", "nginx"}
	for _, c := range []struct {
		got  string
		in   []string
		want string
	}{
		{"windw_s", params, "window_s"},
		{"window", params, "window_s"},
		{"windows_s", params, "window_s"},
		{"Limit", params, "limit"},
		{"limt", params, "limit"},
		{"capcity", params, "capacity"},
		{"brust", params, "burst"}, // swapped neighbours
		{"token-bucket", algs, "token_bucket"},
		{"sliding_windw", algs, "sliding_window"},
		{"TokenBucket", algs, "token_bucket"},
		{"leaky_bucket", algs, ""}, // too far to guess
		{"xyz", params, ""},
		{"colour", params, ""},
		{"gcr", algs, "gcra"},
	} {
		if got := Suggest(c.got, c.in); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.got, got, c.want)
		}
	}
}

func TestMappingReportsEveryUnknownKey(t *testing.T) {
	root, err := Parse([]byte("name: x\nwindw_s: 1\nlimt: 2\nname: y\nlimit: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Mapping(root, "sweep[0]", "name", "window_s", "limit")
	if m == nil || !m.Has("limit") || m.Get("name").Value != "x" {
		t.Fatalf("Mapping did not keep the known keys: %+v", m)
	}
	var es *Errors
	if !errors.As(err, &es) || len(es.List) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	want := []string{
		`line 2: sweep[0].windw_s: unknown field; did you mean "window_s"?`,
		`line 3: sweep[0].limt: unknown field; did you mean "limit"?`,
		`line 4: sweep[0].name: field given twice`,
	}
	for i, w := range want {
		if got := es.List[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("error %d = %q, want prefix %q", i, got, w)
		}
	}
	var one *Error
	if !errors.As(err, &one) || one.Line != 2 {
		t.Errorf("errors.As(*Error) should find the first error, got %v", one)
	}
	if err := InFile(err, "spec.yaml"); !strings.HasPrefix(err.Error(), "spec.yaml:2: ") || strings.Count(err.Error(), "spec.yaml:") != 3 {
		t.Errorf("InFile did not name the file on every line:\n%v", err)
	}
}

func TestCollectorLimitOrderAndSingle(t *testing.T) {
	var c Collector
	if c.Err() != nil || c.Add(nil) {
		t.Fatal("an empty collector has no error")
	}
	c.Add(&Error{Line: 7, Msg: "seven"})
	if e, ok := c.Err().(*Error); !ok || e.Msg != "seven" {
		t.Fatalf("one error comes back as itself, got %T", c.Err())
	}
	for i := range MaxErrors + 5 {
		c.Add(&Error{Line: 100 - i, Msg: fmt.Sprint(i)})
	}
	c.Add(&Error{Line: 7, Msg: "seven"}) // duplicate
	var es *Errors
	if !errors.As(c.Err(), &es) || len(es.List) != MaxErrors || es.More != 6 || c.Len() != MaxErrors+6 {
		t.Fatalf("want %d kept and 6 more, got %v", MaxErrors, c.Err())
	}
	for i := 1; i < len(es.List); i++ {
		if es.List[i-1].Line > es.List[i].Line {
			t.Fatalf("errors not in line order: %v", es)
		}
	}
	if !strings.HasSuffix(es.Error(), "and 6 more errors") {
		t.Errorf("the count of dropped errors is missing: %q", es.Error())
	}
}
