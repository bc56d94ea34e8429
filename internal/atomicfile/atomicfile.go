package atomicfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path atomically with the permissions perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// WriteWith streams the new content to path atomically: write writes it to
// the temporary file; if write fails, path is left untouched and write's
// error is returned.
func WriteWith(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close() // a second close fails harmlessly
			os.Remove(name)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(name, path)
}
