// Command dist builds ratesweep's release archives: for each platform a
// stripped, reproducible binary (-trimpath, -buildvcs=false, no build ID,
// CGO_ENABLED=0, the version and commit stamped), packed with LICENSE,
// NOTICE, THIRD_PARTY_NOTICES (the linked modules' licences), README.md and
// docs/ into ratesweep-VERSION-OS-ARCH.tar.gz (.zip for
// Windows) whose entries all carry the same modification time
// (SOURCE_DATE_EPOCH, else the commit's time); then SHA256SUMS over the
// archives. `make dist` runs it from the repository root, then writes the
// SBOM and checks the linux/amd64 archive.
//
//	go run ./scripts/dist -version 0.1.0 -commit $(git rev-parse HEAD) -out dist
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Platforms are the release targets.
var Platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

const module = "github.com/ratesweep/ratesweep"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	version := fs.String("version", "", "release version, e.g. 0.1.0 (required)")
	commit := fs.String("commit", "", "commit hash stamped into the binaries")
	dirty := fs.Bool("dirty", false, "the tree had uncommitted changes (stamped)")
	out := fs.String("out", "dist", "output directory (emptied first)")
	platforms := fs.String("platforms", strings.Join(Platforms, " "), "GOOS/GOARCH list, separated by spaces or commas")
	sbom := fs.String("sbom", "", "command of cyclonedx-gomod (e.g. \"go run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0\"); empty: no SBOM")
	epoch := fs.Int64("mtime", -1, "modification time of every archive entry, Unix seconds (default: SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return errors.New("-version is required")
	}
	if *epoch < 0 {
		*epoch = 0
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %v", s, err)
			}
			*epoch = n
		}
	}
	mtime := time.Unix(*epoch, 0).UTC()
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var archives []string
	for _, p := range strings.Fields(strings.ReplaceAll(*platforms, ",", " ")) {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not GOOS/GOARCH", p)
		}
		name, err := buildArchive(*out, *version, *commit, *dirty, goos, goarch, mtime)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", goos, goarch, err)
		}
		fmt.Println(filepath.Join(*out, name))
		archives = append(archives, name)
	}
	if *sbom != "" {
		name := fmt.Sprintf("ratesweep-%s.cdx.json", *version)
		args := append(strings.Fields(*sbom), "app", "-json", "-licenses", "-std", "-noserial", "-notimestamp",
			"-main", "cmd/ratesweep", "-output", filepath.Join(*out, name))
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("SBOM: %v: %w", args, err)
		}
		fmt.Println(filepath.Join(*out, name))
		archives = append(archives, name)
	}
	return writeSums(*out, archives)
}

// buildArchive builds the binary of one platform and packs it; it returns
// the archive's file name.
func buildArchive(out, version, commit string, dirty bool, goos, goarch string, mtime time.Time) (string, error) {
	base := fmt.Sprintf("ratesweep-%s-%s-%s", version, goos, goarch)
	exe := "ratesweep"
	if goos == "windows" {
		exe += ".exe"
	}
	tmp, err := os.MkdirTemp("", "ratesweep-dist-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, exe)
	ldflags := fmt.Sprintf("-s -w -buildid= -X %s/internal/version.commit=%s", module, commit)
	if dirty {
		ldflags += fmt.Sprintf(" -X %s/internal/version.modified=true", module)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, "./cmd/ratesweep")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	notices := filepath.Join(tmp, "THIRD_PARTY_NOTICES")
	if err := writeNotices(notices, goos, goarch); err != nil {
		return "", err
	}
	files := []entry{{base + "/" + exe, bin, 0o755}, {base + "/THIRD_PARTY_NOTICES", notices, 0o644}}
	for _, f := range []string{"LICENSE", "NOTICE", "README.md"} {
		files = append(files, entry{base + "/" + f, f, 0o644})
	}
	docs, err := filepath.Glob(filepath.Join("docs", "*"))
	if err != nil {
		return "", err
	}
	for _, f := range docs { // the pages and pictures README.md links to
		if ext := filepath.Ext(f); ext == ".md" || ext == ".png" {
			files = append(files, entry{base + "/docs/" + filepath.Base(f), f, 0o644})
		}
	}
	if goos == "windows" {
		name := base + ".zip"
		return name, writeZip(filepath.Join(out, name), files, mtime)
	}
	name := base + ".tar.gz"
	return name, writeTarGz(filepath.Join(out, name), files, mtime)
}

// entry is one file of an archive: its name inside, its source, its mode.
type entry struct {
	name, src string
	mode      int64
}

func writeTarGz(path string, files []entry, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = mtime // the gzip header's time, too
	tw := tar.NewWriter(gz)
	for _, e := range files {
		b, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

func writeZip(path string, files []entry, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range files {
		b, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(os.FileMode(e.mode))
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// writeSums writes SHA256SUMS in sha256sum's format, sorted by name.
func writeSums(out string, names []string) error {
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f, err := os.Open(filepath.Join(out, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// licenceFile matches the files at a module's root that state its licence
// or credits: LICENSE, LICENCE, UNLICENSE, COPYING, NOTICE, PATENTS and the licence
// texts a dual-licensed module ships beside them (freetype's FTL.txt and
// GPLv2.txt).
var licenceFile = regexp.MustCompile(`(?i)^(un)?(licen[cs]e|copying|notice|patents|ftl|gplv?\d?)([._-].*)?$`)

// licenceDir matches a module's directory of licence texts.
var licenceDir = regexp.MustCompile(`(?i)^licen[cs]es$`)

// writeNotices writes to path the licence texts of every module the binary
// of goos/goarch links (go list -deps), each under its path and version,
// from the module cache.
func writeNotices(path, goos, goarch string) error {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}}\t{{.Dir}}{{end}}{{end}}", "./cmd/ratesweep")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	mods := slices.Compact(slices.Sorted(slices.Values(strings.Split(strings.TrimSpace(string(out)), "\n"))))
	var b strings.Builder
	b.WriteString("ratesweep links the following modules. Each one's licence and notices follow,\nas its authors ship them.\n")
	for _, m := range mods {
		mod, dir, ok := strings.Cut(m, "\t")
		if !ok || mod == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", mod, err)
		}
		var texts []string
		for _, e := range entries {
			switch {
			case e.Type().IsRegular() && licenceFile.MatchString(e.Name()):
				texts = append(texts, e.Name())
			case e.IsDir() && licenceDir.MatchString(e.Name()): // freetype: licenses/ftl.txt, licenses/gpl.txt
				sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
				if err != nil {
					return err
				}
				for _, f := range sub {
					if f.Type().IsRegular() {
						texts = append(texts, filepath.Join(e.Name(), f.Name()))
					}
				}
			}
		}
		if len(texts) == 0 {
			return fmt.Errorf("%s: no licence file in %s", mod, dir)
		}
		for _, name := range texts {
			t, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "\n%s\n== %s (%s)\n%s\n\n%s\n", strings.Repeat("=", 78), mod, name, strings.Repeat("=", 78), strings.TrimSpace(string(t)))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
