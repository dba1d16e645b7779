package models_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clusterdeck/clusterdeck/models"
)

// Sign-up input never panics, and whatever it accepts is normalised and
// within the stored columns' sizes.
func FuzzSignupInput(f *testing.F) {
	f.Add("ada@example.com", "Ada", "correct horse battery", "Ada Co", "")
	f.Add(" A <a@b.c> ", "\x00", "short", strings.Repeat("o", 200), "tok")
	f.Add("\"weird\"@[127.0.0.1]", "名前", "pässwörd-ünïcode", "", "")
	f.Add("a@b", "x", strings.Repeat("é", 40), "\u202e", "")
	f.Fuzz(func(t *testing.T, email, name, password, org, invite string) {
		in := models.SignupInput{Email: email, Name: name, Password: password, OrgName: org, InviteToken: invite}
		in.Normalize()
		fe := in.Validate()
		if fe["email"] == "" {
			if len(in.Email) > 254 || in.Email != strings.ToLower(in.Email) || strings.ContainsAny(in.Email, " \r\n<>") {
				t.Errorf("accepted email %q", in.Email)
			}
		}
		if fe["password"] == "" && (len(password) > models.MaxPasswordBytes || utf8.RuneCountInString(password) < models.MinPasswordLen) {
			t.Errorf("accepted password of %d bytes", len(password))
		}
		if fe["name"] == "" && (utf8.RuneCountInString(in.Name) > 100 || in.Name == "") {
			t.Errorf("accepted name %q", in.Name)
		}
	})
}

// SSH public key parsing never panics; what it accepts is one line with a
// SHA256 fingerprint and re-parses to the same key.
func FuzzParseSSHPublicKey(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGa2Y4rGqkX3jN2Dq0bS1m1l1pQ6yP6rL6bq2x7bqv0F ada@laptop")
	f.Add("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ")
	f.Add("-----BEGIN OPENSSH PRIVATE KEY-----")
	f.Add(`command="x" ssh-ed25519 AAAA`)
	f.Add("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB")
	f.Add("sk-ssh-ed25519@openssh.com AAAA\x00")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := models.ParseSSHPublicKey(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(k.Line, "\r\n") || !strings.HasPrefix(k.Fingerprint, "SHA256:") {
			t.Errorf("accepted %q as %+v", s, k)
		}
		again, err := models.ParseSSHPublicKey(k.Line)
		if err != nil || again.Fingerprint != k.Fingerprint {
			t.Errorf("normalised line does not re-parse: %q: %v", k.Line, err)
		}
	})
}

// API key and bearer parsing never panic; accepted tokens have the exact
// shape and a stable hash.
func FuzzParseAPIKey(f *testing.F) {
	f.Add("Bearer " + models.NewAPIKeyToken())
	f.Add("bearer cdk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Add("Basic dXNlcjpwYXNz")
	f.Add("Bearer  cdk_\x00\xff")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := models.ParseBearer(header)
		if !ok {
			token = header
		}
		prefix, hash, err := models.ParseAPIKey(token)
		if err != nil {
			return
		}
		if len(token) != models.APIKeyLen || !strings.HasPrefix(token, prefix) || len(hash) != 64 {
			t.Errorf("accepted %q: prefix %q hash %q", token, prefix, hash)
		}
		if _, h2, _ := models.ParseAPIKey(token); h2 != hash {
			t.Error("hash not stable")
		}
	})
}
