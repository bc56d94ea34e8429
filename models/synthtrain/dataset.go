package synthtrain

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dataset is an ImageFolder-like tree: Root/<class>/<file>. Files are the
// sample paths relative to Root in lexical order (classes sorted, then
// files), which is the order a seeded shuffle starts from.
type Dataset struct {
	Root  string
	Files []string
	Bytes int64
}

// ScanDataset lists the files with extension ext (case-insensitive) under
// the class directories of root. Hidden entries and top-level files (such
// as the generator's MANIFEST.json) are skipped, as torchvision's
// ImageFolder skips them.
func ScanDataset(root, ext string) (Dataset, error) {
	d := Dataset{Root: root}
	classes, err := os.ReadDir(root)
	if err != nil {
		return d, fmt.Errorf("list dataset %s: %w", root, err)
	}
	for _, c := range classes {
		if !c.IsDir() || strings.HasPrefix(c.Name(), ".") {
			continue
		}
		err := filepath.WalkDir(filepath.Join(root, c.Name()), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(e.Name(), ".") {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() || !strings.EqualFold(filepath.Ext(e.Name()), ext) {
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			d.Files = append(d.Files, rel)
			d.Bytes += info.Size()
			return nil
		})
		if err != nil {
			return d, fmt.Errorf("list dataset %s: %w", root, err)
		}
	}
	if len(d.Files) == 0 {
		return d, fmt.Errorf("dataset %s holds no %s files in class directories (want DIR/<class>/<file>%s)", root, ext, ext)
	}
	return d, nil
}

// epochOrder returns the order in which epoch e visits the files: a
// shuffle seeded by (seed, e), like a DataLoader with shuffle=True.
func epochOrder(n int, seed uint64, epoch int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r := newRNG(seed, 10, uint64(epoch))
	r.shuffle(p)
	return p
}

// readInto reads the whole file at path through the page cache into buf,
// growing it as needed, and returns the bytes read.
func readInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && int64(cap(buf)) < info.Size()+1 {
		buf = make([]byte, 0, info.Size()+512)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
