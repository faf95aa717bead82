package export

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// compiledPolicies are the policies whose Go and Redis exports are
// compiled: the golden ones, and the rates and capacities that once made
// non-integer constants.
var compiledPolicies = append([]string{
	"token_bucket rate=0.3 capacity=7",
	"nginx rate=1.5 burst=3",
	"gcra rate=2 capacity=3",
	"sliding_log window_s=60 limit=5",
	"fixed_window window_s=60 limit=600 phase_s=30",
}, goldenPolicies...)

var importLine = regexp.MustCompile(`(?m)^// import \((.*)\)$`)

// TestGoExportsCompile writes every Go and Redis export, for every key,
// into a package of a module that uses this repository, and runs go vet
// on it: the exports compile and vet as printed.
func TestGoExportsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, _ := filepath.Abs("..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod), "module exportcheck") +
		fmt.Sprintf("\nrequire github.com/ratesweep/ratesweep v0.0.0\n\nreplace github.com/ratesweep/ratesweep => %s\n", root)
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", gomod)
	write("go.sum", string(sum))
	what := map[string]string{} // package → the export it holds
	n := 0
	for _, label := range compiledPolicies {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"go", "redis"} {
			for _, key := range []string{"ip", "global", "header:X-Account"} {
				r, err := Export(p, target, Options{Key: key})
				if err != nil {
					t.Fatalf("%s %s %s: %v", target, label, key, err)
				}
				m := importLine.FindStringSubmatch(r.Config)
				if m == nil {
					t.Fatalf("%s %s: no import line:\n%s", target, label, r.Config)
				}
				pkg := fmt.Sprintf("p%d", n)
				n++
				what[pkg] = fmt.Sprintf("--to %s --key %s %s", target, key, label)
				src := fmt.Sprintf("package %s\n\nimport (%s)\n\n", pkg, m[1])
				if target == "go" {
					src += r.Config
				} else { // statements: the body of a function of the key
					src += "func allow(key string) (bool, error) {\n" + r.Config + "\treturn ok, err\n}\n"
				}
				write(filepath.Join(pkg, "export.go"), src)
			}
		}
	}
	cmd := exec.Command(goBin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := string(out)
		for pkg, w := range what {
			msg = strings.ReplaceAll(msg, " "+pkg+"/export.go", " ["+w+"] export.go")
		}
		t.Fatalf("go vet on the %d exports: %v\n%s", n, err, msg)
	}
	t.Logf("%d Go and Redis exports compile and vet", n)
}
