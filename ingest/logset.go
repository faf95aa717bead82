package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// MaxSetFiles bounds the files of one log read as a set.
const MaxSetFiles = 10_000

// rotationSuffix is logrotate's numbered suffix (access.log.3), before a
// compression extension.
var rotationSuffix = regexp.MustCompile(`\.(\d{1,6})$`)

// compressionExts are the file extensions of compressed logs.
var compressionExts = []string{".gz", ".zst", ".zstd", ".bz2", ".xz"}

// rotationNumber is a rotated file's number (access.log.2.gz: 2), 0 for
// the current file or one with a date suffix.
func rotationNumber(name string) int {
	for _, e := range compressionExts {
		name = strings.TrimSuffix(name, e)
	}
	if m := rotationSuffix.FindStringSubmatch(name); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// SortRotated orders the files of a rotated log oldest first: numbered
// files by their number, highest first (access.log.3.gz, access.log.2.gz,
// access.log.1), then the others (the current file, files with a date
// suffix) by modification time, then name.
func SortRotated(files []string) {
	mtime := map[string]int64{}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			mtime[f] = st.ModTime().UnixNano()
		}
	}
	slices.SortStableFunc(files, func(a, b string) int {
		na, nb := rotationNumber(filepath.Base(a)), rotationNumber(filepath.Base(b))
		switch {
		case na != nb:
			return nb - na
		case mtime[a] != mtime[b]:
			if mtime[a] < mtime[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
}

// ExpandSet returns the files of a log set: a glob pattern's matches in
// rotation order, or a list as given.
func ExpandSet(pattern string) ([]string, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad glob pattern %q: %v", pattern, err)
	}
	var out []string
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no file matches %q", pattern)
	}
	SortRotated(out)
	return out, nil
}

// setReader streams the files of a set as one log: each decompressed on
// its own, a newline added where a file does not end with one.
type setReader struct {
	files []string
	i     int
	f     *os.File
	r     io.Reader
	close func() error
	last  byte
	nl    bool // a newline is owed before the next file
	err   error
}

func (s *setReader) next() error {
	if s.f != nil {
		s.close()
		s.f.Close()
		s.f = nil
	}
	if s.i == len(s.files) {
		return io.EOF
	}
	path := s.files[s.i]
	s.i++
	f, err := Open(path)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(4); string(head) == "PAR1" {
		f.Close()
		return &yamlx.Error{File: path, Msg: "a Parquet file cannot be part of a log read as one (as: one)"}
	}
	r, _, closeZ, err := decompress(br)
	if err != nil {
		f.Close()
		return &yamlx.Error{File: path, Msg: err.Error()}
	}
	s.f, s.r, s.close, s.last = f, r, closeZ, '\n'
	return nil
}

func (s *setReader) Read(p []byte) (int, error) {
	for {
		if s.err != nil {
			return 0, s.err
		}
		if s.nl {
			if len(p) == 0 {
				return 0, nil
			}
			p[0], s.nl = '\n', false
			return 1, nil
		}
		if s.f == nil {
			if s.err = s.next(); s.err != nil {
				return 0, s.err
			}
		}
		n, err := s.r.Read(p)
		if n > 0 {
			s.last = p[n-1]
		}
		if err == io.EOF {
			s.nl = s.last != '\n'
			s.close()
			s.f.Close()
			s.f = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, &yamlx.Error{File: s.files[s.i-1], Msg: err.Error()}
		}
		return n, nil
	}
}

func (s *setReader) Close() {
	if s.f != nil {
		s.close()
		s.f.Close()
	}
}

// LoadSet reads the files of a rotated log, oldest first, as one log (times
// may go back across files no more than within one: max_backwards_s).
// Errors name the first file; line numbers count over the whole set.
func LoadSet(ctx context.Context, files []string, opt Options) (*Traffic, error) {
	if len(files) == 0 {
		return nil, errors.New("a log set without files")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, &yamlx.Error{File: f, Msg: plainErr(err)}
		}
	}
	sr := &setReader{files: files}
	defer sr.Close()
	t, err := Build(ctx, sr, opt)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			be.File = fmt.Sprintf("%s (and %d more files read as one log)", files[0], len(files)-1)
			return nil, be
		}
		var ye *yamlx.Error
		if errors.As(err, &ye) && ye.File != "" {
			return nil, err
		}
		return nil, yamlx.InFile(err, fmt.Sprintf("%s (and %d more files read as one log, lines counted over them all)", files[0], len(files)-1))
	}
	t.Source = files[0]
	return t, nil
}
