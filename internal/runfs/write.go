package runfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrSymlink is returned for a path inside a run directory that is a
// symbolic link where ratesweep writes.
var ErrSymlink = errors.New("is a symbolic link; ratesweep does not write through links inside a run directory")

// Dir makes sure that root/rel is a real directory, creating what is
// missing: no component below root may be a symbolic link (root itself is
// the user's to name). rel must be local (no "..", not absolute).
func Dir(root, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: not a path inside %s", rel, root)
	}
	p := root
	for _, part := range splitPath(filepath.Clean(rel)) {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return "", err
			}
			if st, err = os.Lstat(p); err != nil {
				return "", err
			}
		} else if err != nil {
			return "", err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("%s %w", p, ErrSymlink)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("%s is not a directory", p)
		}
	}
	return p, nil
}

func splitPath(p string) []string {
	if p == "." {
		return nil
	}
	return strings.Split(p, string(filepath.Separator))
}

// WriteFile writes data to dir/name through a new temporary file and a
// rename: a symbolic link at dir/name is replaced, never followed, and a
// reader sees the old file or the new one whole.
func WriteFile(dir, name string, data []byte) error {
	if name != filepath.Base(name) || name == "." || name == ".." {
		return fmt.Errorf("%s: not a file name", name)
	}
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
