package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	a := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil && !inCode {
			s := strings.ToLower(strings.ReplaceAll(m[1], "`", ""))
			s = strings.ReplaceAll(slugDrop.ReplaceAllString(s, ""), " ", "-")
			a[s] = true
		}
	}
	return a
}

// Every link of README.md and docs/*.md to the repository resolves to a file
// (and a heading) in it, and no document sends the reader outside it.
func TestDocLinks(t *testing.T) {
	root := "../.."
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel, _ := filepath.Rel(root, f)
		for _, bad := range outsideNames {
			if strings.Contains(text, bad) {
				t.Errorf("%s: mentions %s, which is not in the repository", rel, bad)
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %s: no such file in the repository", rel, link)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(target, ".md") {
				tb, _ := os.ReadFile(target)
				if !anchors(string(tb))[anchor] {
					t.Errorf("%s: link %s: no heading #%s in %s", rel, link, anchor, filepath.Base(target))
				}
			}
		}
	}
}

// outsideNames are names of files and places outside the repository that
// nothing in it may mention (spelled in pieces so that this file does not).
var outsideNames = []string{
	".." + "/shared", "shared" + "/SPEC", "SPEC" + ".md", "DESIGN" + ".md", "STYLE" + ".md",
	"shared" + "/traffic", "shared" + "/peers", "shared" + "/research", "shared" + "/seeds", "/work" + "/",
}

// No tracked text file of the repository names a file or place outside it:
// code, comments, configs, scripts and docs alike. Third-party files (the
// axe bundle) and fuzz corpora are not read.
func TestStandsAlone(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".git", rel == "out", rel == "bin", rel == "dist", d.Name() == "node_modules", d.Name() == "fuzz" && strings.HasSuffix(filepath.Dir(rel), "testdata"), rel == filepath.Join("scripts", "axe"):
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh", ".js", ".mjs", ".json", ".txt", ".css", ".html", ".toml", ".py", ".jq", ".mod":
		default:
			if d.Name() != "Makefile" && d.Name() != "run" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range outsideNames {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s: mentions %s, which is not in the repository", rel, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
