package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ratesweep/ratesweep/check"
	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/spf13/pflag"
)

// examples are shown by each command's --help (the golden texts under
// testdata/help keep them in view). A command without examples gets a test
// failure, not a silent gap.
var examples = map[string][]string{
	"run": {
		"ratesweep run                                      # the embedded default spec into out/default",
		"ratesweep run configs/lesson-sweep.yaml --out out/lesson --force",
		"ratesweep run spec.yaml --set seed=2 --set 'sweep[0].limit=[100, 200]'",
		"ratesweep run spec.yaml --dry-run                  # points, rows and bytes, nothing run",
		"cat spec.yaml | ratesweep run - --quiet            # the spec from standard input",
		"ratesweep run spec.yaml --out /nfs/runs/week --shard 3/16 --resume",
	},
	"merge": {
		"ratesweep merge out/big                # every shard finished? then write manifest.json",
		"ratesweep merge out/big --sha256       # also hash every file",
		"ratesweep merge out/big --compact      # fewer, larger Parquet files",
	},
	"report": {
		"ratesweep report out/lesson            # plots, tables and index.html under out/lesson/report",
		"ratesweep report out/lesson --curves 6 --knees 3 --out /tmp/lesson-report",
		"ratesweep report out/big --target 'missed<=5%' --allow-incomplete   # a run still in progress",
	},
	"check": {
		"ratesweep check --baseline configs/baselines/lesson out/check-baseline-lesson",
		"ratesweep check --baseline base/ out/pr --tol-rel 1% --format markdown >> \"$GITHUB_STEP_SUMMARY\"",
		"ratesweep check --baseline base/ out/pr --update   # accept the run as the new baseline",
	},
	"inspect": {
		"ratesweep inspect configs/examples/logs/nasa_ksc_19950801/nasa_19950801.tsv.gz",
		"ratesweep inspect --spec configs/examples/antlr-org.yaml --top 20",
		"ratesweep inspect access.csv --format csv --csv-time ts --csv-column ip=client",
	},
	"recommend": {
		"ratesweep recommend out/default --max-false-cut 1% --max-missed 50%",
		"ratesweep recommend out/monday out/tuesday --max-false-cut 1% --max-client-cut 2%   # best in the worse day",
		"ratesweep recommend out/default --max-false-cut 600 --min-caught 75% --format markdown",
		"ratesweep recommend out/default --max-false-cut 1% --max-missed 25%   # exit 1: none meets them; names the nearest miss",
	},
	"explain": {
		"ratesweep explain out/default 'fixed_window window_s=60 limit=600'",
		"ratesweep explain out/default 'token_bucket rate=2 capacity=1100' --vs 'sliding_window window_s=60 limit=600'",
		"ratesweep explain out/lesson 'token_bucket rate=10 capacity=900' --out why -q   # the files only",
	},
	"export": {
		"ratesweep export --to nginx 'token_bucket rate=2 capacity=1100'",
		"ratesweep export --to haproxy --key header:X-Api-Key 'sliding_counter window_s=10 limit=50'",
		"ratesweep export --to envoy --run out/default 'sliding_window window_s=60 limit=600'   # nearest envoy can express",
		"ratesweep export --to traefik --nodes 3 'token_bucket rate=10 capacity=900'",
	},
	"shadow": {
		"ratesweep shadow /var/log/nginx/ratesweep.log 'nginx rate=2 burst=1099 delay=1099'",
		"ratesweep shadow access.log 'nginx rate=10 burst=5 delay=5' --key user",
		"ratesweep shadow /var/log/haproxy.log 'haproxy_rate limit=100 period_s=10 counts=all'",
		"ratesweep shadow --proxy envoy --key global access.log 'token_bucket rate=100 capacity=200'   # local_ratelimit's one bucket per process",
	},
	"tables": {
		"ratesweep tables                       # the lesson's Tables 1-3",
		"ratesweep tables configs/next-step.yaml",
	},
	"version": {
		"ratesweep version",
		"ratesweep --version",
	},
	"init": {
		"ratesweep init > spec.yaml             # a commented starter spec",
		"ratesweep init --out spec.yaml --from-log access.log.gz",
	},
	"schema": {
		"ratesweep schema > ratesweep.schema.json",
		"# then, first line of a spec: # yaml-language-server: $schema=ratesweep.schema.json",
	},
	"completion": {
		"source <(ratesweep completion bash)                          # bash, this shell",
		"ratesweep completion zsh > \"${fpath[1]}/_ratesweep\"         # zsh",
		"ratesweep completion fish > ~/.config/fish/completions/ratesweep.fish",
	},
}

// topExamples are shown by ratesweep --help: a first session.
var topExamples = []string{
	"ratesweep init --out my.yaml                   # a commented starter spec",
	"ratesweep run my.yaml && ratesweep report out/my-sweep",
	"ratesweep check --baseline configs/baselines/lesson out/check-baseline-lesson",
}

// writeHelp prints a command's help: usage, description, examples, flags.
func writeHelp(w io.Writer, fs *pflag.FlagSet, name, args, short string) {
	fmt.Fprintf(w, "Usage: ratesweep %s", name)
	if args != "" {
		fmt.Fprintf(w, " %s", args)
	}
	fmt.Fprintf(w, " [flags]\n\n%s\n", short)
	if ex := examples[name]; len(ex) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, l := range ex {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
}

// commandFlags returns the flags a command registers, by asking it for its
// help with its output discarded (so flags added by anyone appear in
// completion without edits here).
func commandFlags(c command) *pflag.FlagSet {
	e := &env{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	_ = c.run(e, []string{"--help"})
	got := e.flags
	if got == nil {
		got = pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	}
	got.BoolP("help", "h", false, "show this help")
	return got
}

// flagChoices are the values offered for a flag's argument ("command
// --flag"); other flags complete file names.
func flagChoices() map[string][]string {
	var formats []string
	for f := ingest.FormatAuto; !strings.HasPrefix(f.String(), "Format("); f++ { // every format the reader knows
		formats = append(formats, f.String())
	}
	var timeFormats []string
	for f := ingest.TimeFormat(0); f <= ingest.TimeAuto; f++ { // every time format the readers know
		timeFormats = append(timeFormats, f.String())
	}
	var algorithms []string // export's POLICY starts with one: 'token_bucket rate=2 capacity=1100'
	for _, a := range model.Algorithms {
		algorithms = append(algorithms, a.String())
	}
	return map[string][]string{
		"check --format":            check.Formats,
		"inspect --format":          formats,
		"inspect --csv-time-format": timeFormats,
		"inspect --key":             ingest.FieldNames,
		"schema":                    sweep.SchemaKinds, // the argument
		"completion":                {"bash", "zsh", "fish"},
		"recommend --format":        {"text", "markdown", "json"},
		"export --to":               export.Targets,
		"export":                    algorithms, // the argument
		"shadow --key":              {"ip", "user", "path_prefix"},
	}
}

// completionFlag is one flag for a completion script.
type completionFlag struct {
	long, short, usage string
	takesValue         bool
	choices            []string
}

func flagsForCompletion(c command) []completionFlag {
	var out []completionFlag
	commandFlags(c).VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		usage := strings.SplitN(f.Usage, "\n", 2)[0]
		out = append(out, completionFlag{f.Name, f.Shorthand, usage, f.Value.Type() != "bool", flagChoices()[c.name+" --"+f.Name]})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].long < out[j].long })
	return out
}

func cmdCompletion(e *env, args []string) error {
	fs := newFlags(e, "completion", "bash | zsh | fish", "Print a shell completion script for ratesweep's commands and flags.")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("completion: name the shell: bash, zsh or fish")
	}
	var b bytes.Buffer
	switch rest[0] {
	case "bash":
		completionBash(&b)
	case "zsh":
		completionZsh(&b)
	case "fish":
		completionFish(&b)
	default:
		return usagef("completion: unknown shell %q (bash, zsh or fish)", rest[0])
	}
	_, err = e.stdout.Write(b.Bytes())
	return err
}

func completionBash(w io.Writer) {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, "# bash completion for ratesweep (ratesweep completion bash)\n")
	fmt.Fprintf(w, "_ratesweep() {\n")
	fmt.Fprintf(w, "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]}\n")
	fmt.Fprintf(w, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
	fmt.Fprintf(w, "    COMPREPLY=($(compgen -W '%s --help --version' -- \"$cur\"))\n    return\n  fi\n", strings.Join(names, " "))
	fmt.Fprintf(w, "  case \"$cmd $prev\" in\n")
	for _, c := range commands() {
		for _, f := range flagsForCompletion(c) {
			if len(f.choices) > 0 {
				fmt.Fprintf(w, "    '%s --%s') COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", c.name, f.long, strings.Join(f.choices, " "))
			}
		}
	}
	fmt.Fprintf(w, "  esac\n")
	fmt.Fprintf(w, "  local flags= valued=\n  case $cmd in\n")
	for _, c := range commands() {
		var all, valued []string
		for _, f := range flagsForCompletion(c) {
			all = append(all, "--"+f.long)
			if f.short != "" {
				all = append(all, "-"+f.short)
			}
			if f.takesValue {
				valued = append(valued, "--"+f.long)
				if f.short != "" {
					valued = append(valued, "-"+f.short)
				}
			}
		}
		fmt.Fprintf(w, "    %s) flags='%s' valued='%s' ;;\n", c.name, strings.Join(all, " "), strings.Join(valued, " "))
	}
	fmt.Fprintf(w, "  esac\n")
	fmt.Fprintf(w, "  case \" $valued \" in *\" $prev \"*) COMPREPLY=($(compgen -f -- \"$cur\")); return ;; esac\n")
	fmt.Fprintf(w, "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\")); return; fi\n")
	for _, c := range commands() {
		if args := flagChoices()[c.name]; args != nil {
			fmt.Fprintf(w, "  if [ \"$cmd\" = %s ]; then COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return; fi\n", c.name, strings.Join(args, " "))
		}
	}
	fmt.Fprintf(w, "  COMPREPLY=($(compgen -f -- \"$cur\"))\n}\n")
	fmt.Fprintf(w, "complete -o filenames -o bashdefault -F _ratesweep ratesweep\n")
}

// zshQuote escapes a description for _arguments and _describe.
func zshQuote(s string) string {
	return strings.NewReplacer("'", "'\\''", "[", "\\[", "]", "\\]", ":", "\\:").Replace(s)
}

func completionZsh(w io.Writer) {
	fmt.Fprintf(w, "#compdef ratesweep\n# zsh completion for ratesweep (ratesweep completion zsh)\n\n")
	fmt.Fprintf(w, "_ratesweep() {\n  local -a commands\n  commands=(\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "    '%s:%s'\n", c.name, zshQuote(c.short))
	}
	fmt.Fprintf(w, "  )\n  if (( CURRENT == 2 )); then\n    _describe -t commands 'ratesweep command' commands\n    return\n  fi\n")
	fmt.Fprintf(w, "  local cmd=${words[2]}\n  shift words\n  (( CURRENT-- ))\n  case $cmd in\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "    %s)\n      _arguments -s \\\n", c.name)
		for _, f := range flagsForCompletion(c) {
			val := ""
			switch {
			case len(f.choices) > 0:
				val = ":value:(" + strings.Join(f.choices, " ") + ")"
			case f.takesValue:
				val = ":value:_files"
			}
			names := "--" + f.long
			if f.short != "" {
				names = fmt.Sprintf("'(-%s --%s)'{-%s,--%s}", f.short, f.long, f.short, f.long)
				fmt.Fprintf(w, "        %s'[%s]%s' \\\n", names, zshQuote(f.usage), val)
				continue
			}
			fmt.Fprintf(w, "        '%s[%s]%s' \\\n", names, zshQuote(f.usage), val)
		}
		if args := flagChoices()[c.name]; args != nil {
			fmt.Fprintf(w, "        '1:argument:(%s)'\n      ;;\n", strings.Join(args, " "))
			continue
		}
		fmt.Fprintf(w, "        '*:file:_files'\n      ;;\n")
	}
	fmt.Fprintf(w, "  esac\n}\n\n_ratesweep \"$@\"\n")
}

// fishQuote quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func completionFish(w io.Writer) {
	fmt.Fprintf(w, "# fish completion for ratesweep (ratesweep completion fish)\n")
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, "complete -c ratesweep -f -n 'not __fish_seen_subcommand_from %s' -l version -d 'print the version'\n", strings.Join(names, " "))
	for _, c := range commands() {
		fmt.Fprintf(w, "complete -c ratesweep -f -n 'not __fish_seen_subcommand_from %s' -a %s -d %s\n",
			strings.Join(names, " "), c.name, fishQuote(c.short))
	}
	for _, c := range commands() {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		if args := flagChoices()[c.name]; args != nil {
			fmt.Fprintf(w, "complete -c ratesweep -f -n %s -a %s\n", cond, fishQuote(strings.Join(args, " ")))
		}
		for _, f := range flagsForCompletion(c) {
			fmt.Fprintf(w, "complete -c ratesweep -n %s -l %s", cond, f.long)
			if f.short != "" {
				fmt.Fprintf(w, " -s %s", f.short)
			}
			switch {
			case len(f.choices) > 0:
				fmt.Fprintf(w, " -x -a %s", fishQuote(strings.Join(f.choices, " ")))
			case f.takesValue:
				fmt.Fprintf(w, " -r -F")
			}
			fmt.Fprintf(w, " -d %s\n", fishQuote(f.usage))
		}
	}
}
