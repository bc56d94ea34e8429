package main

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestK8s_FlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s", "webhook"}, "--tls-cert-file: required"},
		{[]string{"k8s", "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--profiles-configmap", "nons"}, `--profiles-configmap: "nons": want NAMESPACE/NAME`},
		{[]string{"k8s", "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--profiles-configmap", "a/b", "--profiles-dir", "d"}, "--profiles-configmap and --profiles-dir: give one"},
		{[]string{"k8s", "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--node-selector", "a in (b"}, "--node-selector: "},
		{[]string{"k8s", "scheduler", "--strategy", "nosuch"}, `--strategy: unknown strategy "nosuch"`},
		{[]string{"k8s", "scheduler", "--resync", "0s"}, "--resync = 0s: need a positive duration"},
		{[]string{"k8s", "scheduler", "--lease-namespace", ""}, "--leader-elect needs --lease-namespace and --lease-name"},
		{[]string{"k8s", "scheduler", "extra"}, `unexpected argument "extra"`},
		{[]string{"k8s", "certs", "--hosts", " , "}, "--hosts: no host names"},
		{[]string{"k8s", "certs", "--validity", "-1h"}, "--validity = -1h0m0s: need a positive duration"},
		{[]string{"k8s", "cluster", "--node-selector", "=="}, "--node-selector: "},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("synergy %s: error %v, want it to contain %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestK8s_CertsWritesAServingPairAndPrintsTheCABundle(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "k8s", "certs", "--hosts", "synergy-webhook.synergy-system.svc,127.0.0.1", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("printed caBundle is not base64: %v", err)
	}
	if disk, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(disk) != string(caPEM) {
		t.Error("printed caBundle differs from ca.crt")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("caBundle holds no certificate")
	}
	certPEM, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"synergy-webhook.synergy-system.svc", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("tls.crt does not verify for %s against the CA: %v", host, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tls.key: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
}
