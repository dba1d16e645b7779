package models

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateSoftware(t *testing.T) {
	tests := []struct {
		software, kind string
		want           string // "" = valid
	}{
		{"", "container", ""},
		{"none", "container", ""},
		{"slurm", "container", ""},
		{"ray", "container", ""},
		{"kubernetes", "vm", ""},
		{"kubernetes", "bare_metal", ""},
		{"kubernetes", "container", "Kubernetes needs vm or bare_metal machines; this offer runs containers"},
		{"Slurm", "vm", "choose one of none, slurm, kubernetes, ray"},
		{"lsf", "vm", "choose one of none, slurm, kubernetes, ray"},
	}
	for _, tt := range tests {
		fe := ValidateSoftware(tt.software, tt.kind)
		if got := fe["software"]; got != tt.want || (tt.want == "") != (fe.Err() == nil) {
			t.Errorf("ValidateSoftware(%q, %q) = %v, want %q", tt.software, tt.kind, fe, tt.want)
		}
	}
}

func TestTakeKubeReport(t *testing.T) {
	join := "kubeadm join 10.77.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:" + strings.Repeat("0f", 32)
	out := "[init] Using Kubernetes version: v1.30.4\n" +
		BlockBegin(joinCommandBlock) + "\n" + join + "\n" + BlockEnd(joinCommandBlock) + "\n" +
		BlockBegin(kubeconfigBlock) + "\napiVersion: v1\nkind: Config\n" + BlockEnd(kubeconfigBlock) + "\ndone\n"
	rest, rep := takeKubeReport(out)
	if rep.JoinCommand != join || rep.Kubeconfig != "apiVersion: v1\nkind: Config" {
		t.Errorf("report = %+v", rep)
	}
	if strings.Contains(rest, "kind: Config") || strings.Contains(rest, "--token") || !strings.HasSuffix(rest, "done\n") ||
		!strings.Contains(rest, "[kubeconfig received; stored on the cluster]") {
		t.Errorf("rest:\n%s", rest)
	}
	// An unterminated block is left alone (and nothing is taken from it).
	cut := "x\n" + BlockBegin(kubeconfigBlock) + "\napiVersion: v1\n"
	if rest, rep := takeKubeReport(cut); rest != cut || rep.Kubeconfig != "" {
		t.Errorf("unterminated block: %q %+v", rest, rep)
	}
}

func TestValidJoinCommand(t *testing.T) {
	good := "kubeadm join 10.77.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:" + strings.Repeat("ab", 32)
	for _, s := range []string{good, good + "; rm -rf /", "kubeadm join $(id):6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:" + strings.Repeat("ab", 32), ""} {
		if got, want := validJoinCommand(s), s == good; got != want {
			t.Errorf("validJoinCommand(%q) = %v", s, got)
		}
	}
}

func TestDerivedCredentials(t *testing.T) {
	c := Cluster{ID: "cl_test", AgentSecret: "s3cret"}
	other := Cluster{ID: "cl_other", AgentSecret: "other"}
	tok := KubeBootstrapToken(c)
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(tok) || tok != KubeBootstrapToken(c) || tok == KubeBootstrapToken(other) {
		t.Errorf("bootstrap token %q is not a stable per-cluster kubeadm token", tok)
	}
	if k := MungeKey(c); len(k) != 1024 || string(k) == string(MungeKey(other)) {
		t.Errorf("munge key: %d bytes", len(k))
	}
	if !validJoinCommand(strings.Replace(DerivedJoinCommand(c, ClusterNode{PrivateIP: "10.77.0.1"}),
		"--discovery-token-unsafe-skip-ca-verification", "--discovery-token-ca-cert-hash sha256:"+strings.Repeat("0", 64), 1)) {
		t.Errorf("derived join command %q", DerivedJoinCommand(c, ClusterNode{PrivateIP: "10.77.0.1"}))
	}
}

func TestOutputBounds(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes
	for n := 30; n < 60; n++ {
		if got := tailBytes(s, n); len(got) > n || !utf8.ValidString(got) || !strings.HasPrefix(got, "[… earlier output cut …]") {
			t.Errorf("tailBytes(%d) = %q", n, got)
		}
		if got := truncate(s, n); len(got) > n || !utf8.ValidString(got) {
			t.Errorf("truncate(%d) = %q", n, got)
		}
	}
	if got := cleanOutput("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Errorf("cleanOutput = %q", got)
	}
}
