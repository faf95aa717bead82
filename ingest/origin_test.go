package ingest

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// window_origin decodes, round-trips through the canonical YAML (absent
// when it is the default) and rejects unknown values naming the field.
func TestWindowOriginConfig(t *testing.T) {
	decode := func(extra string) (*Config, error) {
		n, err := yamlx.Parse([]byte("log: a.log\n" + extra))
		if err != nil {
			t.Fatal(err)
		}
		return DecodeConfig(n, "traffic", ".")
	}
	for _, c := range []struct {
		extra string
		want  WindowOrigin
	}{{"", OriginEpoch}, {"window_origin: epoch\n", OriginEpoch}, {"window_origin: log_start\n", OriginLogStart}} {
		cfg, err := decode(c.extra)
		if err != nil || cfg.WindowOrigin != c.want {
			t.Fatalf("%q: %v, %v", c.extra, cfg, err)
		}
		y := string(cfg.YAML())
		if strings.Contains(y, "window_origin") != (c.want != OriginEpoch) {
			t.Errorf("%q: canonical YAML %s", c.extra, y)
		}
		n, _ := yamlx.Parse([]byte(y))
		again, err := DecodeConfig(n.Content[1], "traffic", ".")
		if err != nil || again.WindowOrigin != c.want {
			t.Errorf("%q: round trip %v, %v", c.extra, again, err)
		}
	}
	if _, err := decode("window_origin: first\n"); err == nil || !strings.Contains(err.Error(), "window_origin") {
		t.Errorf("bad value: %v", err)
	}
	tr := &Traffic{StartUnix: 1_767_225_630}
	if OriginEpoch.OriginNs(tr) != 1_767_225_630e9 || OriginLogStart.OriginNs(tr) != 0 {
		t.Error("OriginNs")
	}
}
