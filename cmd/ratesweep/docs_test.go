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
		for _, bad := range []string{"../shared", "shared/SPEC", "SPEC.md", "shared/traffic", "shared/peers"} {
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
