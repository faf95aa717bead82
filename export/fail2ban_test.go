package export

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// fail2banLines are the statements of the fail2ban export, in order
// (comments and blank lines aside).
var fail2banLines = []*regexp.Regexp{
	regexp.MustCompile(`^log_format ([A-Za-z0-9_-]+) '\$msec \$remote_addr \$status "\$request"';$`),
	regexp.MustCompile(`^\[Definition\]$`),
	regexp.MustCompile(`^failregex = \^\\s\*<HOST> (\\d\{3\}|\(\?:[0-9|\\d]+\))\\s$`),
	regexp.MustCompile(`^datepattern = \^EPOCH$`),
	regexp.MustCompile(`^\[([A-Za-z0-9_-]+)\]$`),
	regexp.MustCompile(`^enabled = true$`),
	regexp.MustCompile(`^filter = ([A-Za-z0-9_-]+)$`),
	regexp.MustCompile(`^logpath = /var/log/nginx/([A-Za-z0-9_-]+)\.log$`),
	regexp.MustCompile(`^port = http,https$`),
	regexp.MustCompile(`^maxretry = ([1-9][0-9]*)$`),
	regexp.MustCompile(`^findtime = ([1-9][0-9]*)$`),
	regexp.MustCompile(`^bantime = ([1-9][0-9]*)$`),
	regexp.MustCompile(`^usedns = no$`),
}

// parseFail2ban reads the export back: the fail2ban policy of its jail and
// the failregex's statuses.
func parseFail2ban(conf string) (model.Policy, error) {
	var lines []string
	for _, l := range strings.Split(conf, "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if strings.ContainsAny(l, "\r%") {
			return model.Policy{}, fmt.Errorf("a carriage return or interpolation in %q", l)
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(fail2banLines) {
		return model.Policy{}, fmt.Errorf("%d statements, want %d: %q", len(lines), len(fail2banLines), lines)
	}
	var m [][]string
	for i, l := range lines {
		sub := fail2banLines[i].FindStringSubmatch(l)
		if sub == nil {
			return model.Policy{}, fmt.Errorf("line %q", l)
		}
		m = append(m, sub)
	}
	if name := m[0][1]; m[4][1] != name || m[6][1] != name || m[7][1] != name {
		return model.Policy{}, fmt.Errorf("names %s, %s, %s, %s differ", name, m[4][1], m[6][1], m[7][1])
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i][1], 10, 64); return v }
	return model.Policy{Algorithm: model.Fail2ban, Limit: n(9), WindowS: int(n(10)), MitigationTimeoutS: int(n(11))}, nil
}

// The fail2ban policy exports exactly: its jail reads back as the policy,
// and the filter counts count_if's statuses (whole hundreds as \d\d).
func TestFail2banExport(t *testing.T) {
	for label, statuses := range map[string]string{
		"fail2ban window_s=600 limit=5 mitigation_timeout_s=3600":                         `\d{3}`,
		"fail2ban window_s=3 limit=5 mitigation_timeout_s=4 count_if=401,403":             `(?:401|403)`,
		"fail2ban window_s=60 limit=10 mitigation_timeout_s=60 count_if=401,429,500-599":  `(?:401|429|5\d\d)`,
		"fail2ban window_s=60 limit=10 mitigation_timeout_s=60 count_if=400-499,502":      `(?:4\d\d|502)`,
		"fail2ban window_s=1 limit=1 mitigation_timeout_s=1 key=address count_if=500-503": `(?:500|501|502|503)`,
	} {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Export(p, "fail2ban", Options{})
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		back, err := parseFail2ban(r.Config)
		if err != nil {
			t.Fatalf("%s: %v\n%s", label, err, r.Config)
		}
		bare := p
		bare.CountIf, bare.Key = "", 0
		if r.Fit != Exact || back.Canonical() != bare.Canonical() {
			t.Errorf("%s: fit %s, reads back as %s", label, r.Fit, back.Canonical())
		}
		if want := `failregex = ^\s*<HOST> ` + statuses + `\s`; !strings.Contains(r.Config, want) {
			t.Errorf("%s: no %q in\n%s", label, want, r.Config)
		}
	}
	p, _ := model.ParseLabel("fail2ban window_s=600 limit=5 mitigation_timeout_s=600")
	for _, key := range []string{"global", "header:X-Api-Key"} {
		if _, err := Export(p, "fail2ban", Options{Key: key}); err == nil || !strings.Contains(err.Error(), "--key "+key) {
			t.Errorf("--key %s: %v, want a refusal naming it", key, err)
		}
	}
	// A penalty box's block_s is the nearest jail's bantime.
	q, _ := model.ParseLabel("sliding_window window_s=3 limit=4 block_s=4")
	r, err := Export(q, "fail2ban", Options{})
	if err != nil || r.Fit != Nearest || r.Exported.Canonical() != "fail2ban window_s=3 limit=5 mitigation_timeout_s=4" {
		t.Errorf("%s: %v, %v", q.Canonical(), err, r)
	}
}

// The filter of a count_if export matches exactly the lines of its
// statuses, as fail2ban-regex (Debian's fail2ban) reads them; skipped
// where fail2ban is not installed.
func TestFail2banFilterMatches(t *testing.T) {
	bin, err := exec.LookPath("fail2ban-regex")
	if err != nil {
		t.Skip("fail2ban-regex is not installed")
	}
	p, _ := model.ParseLabel("fail2ban window_s=60 limit=10 mitigation_timeout_s=60 count_if=401,500-599")
	r, err := Export(p, "fail2ban", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, filter, _ := strings.Cut(r.Config, "filter.d/ratesweep.conf\n")
	filter, _, _ = strings.Cut(filter, "\n\n")
	dir := t.TempDir()
	logPath, filterPath := filepath.Join(dir, "access.log"), filepath.Join(dir, "filter.conf")
	var log strings.Builder
	want := 0
	for i, st := range []int{200, 401, 403, 404, 500, 503, 599, 302, 4011} {
		fmt.Fprintf(&log, "1796601600.%03d 10.0.0.%d %d \"GET /x HTTP/1.1\"\n", i, i+1, st)
		if st == 401 || st >= 500 && st <= 599 {
			want++
		}
	}
	if err := os.WriteFile(logPath, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filterPath, []byte(filter+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, logPath, filterPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m := regexp.MustCompile(`Lines: 9 lines, 0 ignored, (\d+) matched`).FindSubmatch(out); m == nil || string(m[1]) != strconv.Itoa(want) {
		t.Errorf("want %d matched:\n%s", want, out)
	}
}
