package k8s

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCertReloader_ServesTheRenewedCertificate: a renewed Secret (new files)
// is served without a restart; a broken renewal keeps the last good one.
func TestCertReloader_ServesTheRenewedCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(c ServingCerts, mod time.Time) {
		t.Helper()
		for f, data := range map[string][]byte{certFile: c.Cert, keyFile: c.Key} {
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, mod, mod); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := NewServingCerts([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewServingCerts([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	t0 := time.Now().Add(-time.Hour)
	write(a, t0)
	got, err := r.get(nil)
	if err != nil {
		t.Fatal(err)
	}
	first := got.Certificate[0]
	write(b, t0.Add(time.Minute))
	got, err = r.get(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got.Certificate[0], first) {
		t.Error("the renewed certificate is not served")
	}
	second := got.Certificate[0]
	if err := os.WriteFile(certFile, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(certFile, t0.Add(2*time.Minute), t0.Add(2*time.Minute))
	got, err = r.get(nil)
	if err != nil || !bytes.Equal(got.Certificate[0], second) {
		t.Errorf("a broken renewal: %v; want the last good certificate served", err)
	}
}
