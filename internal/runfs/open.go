package runfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError says a file of a run directory is not a regular file (a
// named pipe, a socket, a device or a directory): ratesweep reads only
// regular files there, so that no read blocks or never ends.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: is not a regular file (%s): a run directory holds only regular files", e.Path, Kind(e.Mode))
}

// Kind names a file mode for a message: "a named pipe", "a directory", ….
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

// OpenRegular opens path for reading only if it is a regular file
// (symbolic links followed). It never blocks on a named pipe: the mode is
// checked before the open, and the open itself does not wait (O_NONBLOCK
// where the platform has it), then checked again on the file opened. A
// file of another kind is a *NotRegularError.
func OpenRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() { // replaced between the two looks
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, nil
}

// ReadRegular reads a regular file of at most limit bytes (OpenRegular);
// a larger one is an error naming the file and the limit.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes, more than such a file ever holds", path, limit)
	}
	return data, nil
}
