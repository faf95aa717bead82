package main

import (
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	stream := `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestOK"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"a","Test":"TestOK","Elapsed":0.1}
{"Action":"output","Package":"a","Output":"PASS\n"}
{"Action":"pass","Package":"a","Elapsed":1.25}
{"Action":"start","Package":"b"}
{"Action":"run","Package":"b","Test":"TestBad"}
{"Action":"output","Package":"b","Test":"TestBad","Output":"    b_test.go:9: got 2, want 3\n"}
{"Action":"fail","Package":"b","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"b","Output":"FAIL\n"}
{"Action":"fail","Package":"b","Elapsed":2}
{"Action":"start","Package":"d"}
{"Action":"output","Package":"d","Output":"ok  \tpkg/d\t(cached)\n"}
{"Action":"pass","Package":"d","Elapsed":0}
{"Action":"start","Package":"c"}
{"Action":"run","Package":"c","Test":"TestSlow"}
`
	var out strings.Builder
	p := newProgress(&out, time.Minute)
	if err := p.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	p.report(time.Now().Add(2 * time.Minute))
	if !p.finish() {
		t.Error("finish = false, want true (b failed)")
	}
	got := out.String()
	for _, want := range []string{
		"ok    a  1.2s\n",
		"    b_test.go:9: got 2, want 3\nFAIL\nFAIL  b  2.0s\n",
		"still running: c (120 s; TestSlow 120 s)\n",
		"FAIL  c  (no result)\n",
		"ok    d  (cached)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN   TestOK") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

func TestParseArgs(t *testing.T) {
	goCmd, quiet, rest, err := parseArgs([]string{"-go", "go1.26", "-quiet=5s", "-tags", "long", "-run", "^TestX$", "./..."})
	if err != nil || goCmd != "go1.26" || quiet != 5*time.Second || strings.Join(rest, " ") != "-tags long -run ^TestX$ ./..." {
		t.Errorf("got %q %v %q %v", goCmd, quiet, rest, err)
	}
	if _, _, _, err := parseArgs([]string{"-go"}); err == nil {
		t.Error("-go without a value: no error")
	}
}
