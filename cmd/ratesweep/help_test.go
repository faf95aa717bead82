package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"

	"github.com/spf13/pflag"
)

// Every command's --help (and ratesweep --help) is golden: usage, examples,
// flags. After adding a flag or a command: go test ./cmd/ratesweep -run
// TestHelpGolden -update, and read the diff.
func TestHelpGolden(t *testing.T) {
	code, out, stderr := runCLI(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr)
	}
	golden(t, filepath.Join("help", "ratesweep.txt"), out)
	for _, c := range commands() {
		code, out, stderr := runCLI(t, c.name, "--help")
		if code != 0 || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", c.name, code, stderr)
			continue
		}
		if !strings.Contains(out, "\nExamples:\n  ") {
			t.Errorf("%s --help has no examples (add them to examples in help.go)", c.name)
		}
		golden(t, filepath.Join("help", c.name+".txt"), out)
		if code, out2, _ := runCLI(t, "help", c.name); code != 0 || out2 != out {
			t.Errorf("help %s differs from %s --help", c.name, c.name)
		}
	}
}

// A bad flag is a usage error that points to --help, without the help itself.
func TestBadFlagPointsToHelp(t *testing.T) {
	code, out, stderr := runCLI(t, "run", "--bogus")
	if code != exitUsage || out != "" || stderr != "ratesweep: run: unknown flag: --bogus (see ratesweep run --help)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// -q/--quiet on the commands that print progress: nothing on stdout.
func TestQuietEverywhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	for _, args := range [][]string{
		{"run", "../../configs/lesson-sweep.yaml", "--out", dir, "-q"},
		{"merge", dir, "-q"},
		{"report", dir, "-q", "--out", filepath.Join(t.TempDir(), "rep")},
		{"init", "-q", "--out", filepath.Join(t.TempDir(), "s.yaml")},
		{"inspect", "-q", "../../configs/examples/logs/antlr_org_20030902/access.log.gz", "--scenario-out", filepath.Join(t.TempDir(), "s.yaml")},
	} {
		code, out, stderr := runCLI(t, args...)
		if args[0] == "inspect" {
			out = "" // the profile is the result, not progress
		}
		if code != 0 || out != "" || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
}

// completionScript writes ratesweep's completion script for shell.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, stderr := runCLI(t, "completion", shell)
	if code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, stderr)
	}
	p := filepath.Join(t.TempDir(), "ratesweep."+shell)
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shellOut runs a script in a shell and returns its output.
func shellOut(t *testing.T, shell, script string) string {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skipf("%s not installed", shell)
	}
	out, err := exec.Command(shell, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	return string(out)
}

// The shells themselves complete every command and every registered flag of
// every command from the generated scripts.
func TestCompletion(t *testing.T) {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	complete := map[string]func(t *testing.T, script string, words ...string) []string{
		"bash": func(t *testing.T, script string, words ...string) []string {
			out := shellOut(t, "bash", "source "+script+"; COMP_WORDS=(ratesweep "+strings.Join(words, " ")+
				"); COMP_CWORD="+itoa(len(words))+"; _ratesweep; printf '%s\\n' \"${COMPREPLY[@]}\"")
			return strings.Fields(out)
		},
		"fish": func(t *testing.T, script string, words ...string) []string {
			out := shellOut(t, "fish", "source "+script+"; complete -C 'ratesweep "+strings.Join(words, " ")+"'")
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
			return got
		},
		// zsh's completion system needs a terminal; stubs of _describe and
		// _arguments print what the script hands them.
		"zsh": func(t *testing.T, script string, words ...string) []string {
			out := shellOut(t, "zsh", `_describe() { print -l -- "${(@P)4}" | cut -d: -f1; }
_arguments() { local a; for a in "$@"; do print -r -- "$a"; done | sed -n 's/^([^)]*)//; s/^\([-a-z0-9]*\)\[.*/\1/p; s/^{\(-.\),\(--[a-z0-9-]*\)}.*/\1 \2/p'; }
_files() { :; }
source `+script+`
words=(ratesweep '`+strings.Join(words, "' '")+`'); CURRENT=${#words}; _ratesweep`)
			return strings.Fields(out)
		},
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script := completionScript(t, shell)
			got := complete[shell](t, script, "")
			for _, n := range names {
				if !containsStr(got, n) {
					t.Errorf("commands: %q missing from %v", n, got)
				}
			}
			// Values of enumerated flags and arguments.
			for words, want := range map[string][]string{
				"check --format ":            {"text", "markdown", "json"},
				"inspect --csv-time-format ": {"unix", "unix_ms", "unix_us", "unix_ns", "rfc3339", "clf", "auto"},
				"schema ":                    {"spec", "scenario"},
				"export --to nginx ":         registeredNames(), // every registered algorithm
				"completion ":                {"bash", "zsh", "fish"},
			} {
				got := complete[shell](t, script, append(strings.Fields(words), "")...)
				if shell == "zsh" {
					w := strings.Fields(words)
					if len(w) == 3 { // a flag and its value, then the argument: _arguments' '1:' spec
						w = w[:1]
					}
					got = zshChoices(t, script, w)
				}
				if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
					t.Errorf("%q completes to %v, want %v", words, got, want)
				}
			}
			for _, c := range commands() {
				got := complete[shell](t, script, c.name, "--")
				commandFlags(c).VisitAll(func(f *pflagFlag) {
					if !containsStr(got, "--"+f.Name) {
						t.Errorf("%s --: %q missing from %v", c.name, "--"+f.Name, got)
					}
				})
			}
		})
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

type pflagFlag = pflag.Flag

func itoa(i int) string { return strconv.Itoa(i) }

// zshChoices returns the values zsh's _arguments is told to offer after
// words (a command and maybe a flag): "--flag[...]:value:(a b)" or
// "1:argument:(a b)".
func zshChoices(t *testing.T, script string, words []string) []string {
	t.Helper()
	out := shellOut(t, "zsh", `_arguments() { local a; for a in "$@"; do print -r -- "$a"; done; }
_describe() { :; }
_files() { :; }
source `+script+`
words=(ratesweep `+words[0]+` ''); CURRENT=3; _ratesweep`)
	for _, l := range strings.Split(out, "\n") {
		open := strings.Index(l, ":(")
		if open < 0 || !strings.HasSuffix(l, ")") {
			continue
		}
		if (len(words) == 1 && strings.HasPrefix(l, "1:")) || (len(words) == 2 && strings.Contains(l, words[1]+"[")) {
			return strings.Fields(l[open+2 : len(l)-1])
		}
	}
	return nil
}

// exampleCommands returns the ratesweep command lines in a help example,
// split into words as a shell would (quotes, pipes, comments, &&).
func exampleCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	end := func() {
		flush()
		if len(words) > 0 && words[0] == "ratesweep" {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				j = len(line) - i - 1
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '#' && !inWord:
			end()
			return cmds
		case ch == '|' || ch == '>' || ch == '&' || ch == ')' || ch == ';':
			end()
		case ch == '(' || ch == '<':
			flush()
			words = nil
		case ch == ' ':
			flush()
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	end()
	return cmds
}

// Every command line in an example of --help (and of ratesweep --help) names
// a real command and parses with that command's flags.
func TestHelpExamplesParse(t *testing.T) {
	byName := map[string]command{}
	for _, c := range commands() {
		byName[c.name] = c
	}
	lines := slices.Clone(topExamples)
	for _, ex := range examples {
		lines = append(lines, ex...)
	}
	n := 0
	for _, l := range lines {
		for _, words := range exampleCommands(l) {
			n++
			if len(words) < 2 || words[1] == "--version" {
				continue
			}
			c, ok := byName[words[1]]
			if !ok {
				t.Errorf("%q: no command %q", l, words[1])
				continue
			}
			if err := commandFlags(c).Parse(words[2:]); err != nil {
				t.Errorf("%q: %v", l, err)
			}
		}
	}
	if n < 25 {
		t.Errorf("only %d example commands found", n)
	}
	if got := exampleCommands(`cat s.yaml | ratesweep run - --set 'a=[1, 2]' -q  # x`); len(got) != 1 || !slices.Equal(got[0], []string{"ratesweep", "run", "-", "--set", "a=[1, 2]", "-q"}) {
		t.Errorf("exampleCommands: %q", got)
	}
}

// registeredNames are the registered algorithms' names, in registry order.
func registeredNames() []string {
	var out []string
	for _, a := range model.Algorithms {
		out = append(out, a.String())
	}
	return out
}
