package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"
)

// SSHKey is a user's OpenSSH public key in one organisation; launches put
// the chosen keys on every node (N3).
type SSHKey struct {
	ID          string `gorm:"primaryKey;size:32"`
	UserID      string `gorm:"size:32;index"`
	OrgID       string `gorm:"size:32;index"`
	Name        string `gorm:"size:100"`
	PublicKey   string `gorm:"size:16000"` // one authorized_keys line: type, base64, comment
	Fingerprint string `gorm:"size:100"`   // SHA256:…
	CreatedAt   time.Time
}

func up0104SshKeys(tx *gorm.DB) error {
	type sshKey struct {
		ID          string `gorm:"primaryKey;size:32"`
		UserID      string `gorm:"size:32;index:idx_ssh_keys_user_id"`
		OrgID       string `gorm:"size:32;index:idx_ssh_keys_org_id"`
		Name        string `gorm:"size:100"`
		PublicKey   string `gorm:"size:16000"`
		Fingerprint string `gorm:"size:100"`
		CreatedAt   time.Time
	}
	if err := tx.Table("ssh_keys").Migrator().CreateTable(&sshKey{}); err != nil {
		return err
	}
	return tx.Exec("CREATE UNIQUE INDEX idx_ssh_keys_owner_fingerprint ON ssh_keys (org_id, user_id, fingerprint)").Error
}

// sshKeyTypes are the public key algorithms we accept: no DSA, no
// certificates.
var sshKeyTypes = map[string]bool{
	ssh.KeyAlgoED25519:    true,
	ssh.KeyAlgoSKED25519:  true,
	ssh.KeyAlgoECDSA256:   true,
	ssh.KeyAlgoECDSA384:   true,
	ssh.KeyAlgoECDSA521:   true,
	ssh.KeyAlgoSKECDSA256: true,
	ssh.KeyAlgoRSA:        true,
}

// MinRSABits is the smallest RSA key we accept.
const MinRSABits = 2048

// ParsedSSHKey is a validated public key.
type ParsedSSHKey struct {
	Type        string
	Line        string // normalised authorized_keys line, with the comment if any
	Fingerprint string // SHA256:…
	Comment     string
}

// ParseSSHPublicKey accepts exactly one real OpenSSH public key line
// ("ssh-ed25519 AAAA… comment"): no options, no private keys, no
// certificates, no DSA, RSA of at least 2048 bits. Errors are customer-safe.
func ParseSSHPublicKey(s string) (ParsedSSHKey, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return ParsedSSHKey{}, errors.New("Paste your public key, e.g. the contents of ~/.ssh/id_ed25519.pub.")
	case len(s) > 16000:
		return ParsedSSHKey{}, errors.New("That is too long for a public key.")
	case strings.Contains(s, "PRIVATE KEY"):
		return ParsedSSHKey{}, errors.New("That is a private key: never share it. Paste the .pub file instead.")
	case strings.ContainsAny(s, "\r\n"):
		return ParsedSSHKey{}, errors.New("Paste one key (a single line).")
	case !utf8.ValidString(s):
		return ParsedSSHKey{}, errors.New("That is not an OpenSSH public key.")
	}
	typ, _, _ := strings.Cut(s, " ")
	if !sshKeyTypes[typ] {
		if typ == ssh.InsecureKeyAlgoDSA {
			return ParsedSSHKey{}, errors.New("DSA keys are not accepted: use ssh-keygen -t ed25519.")
		}
		return ParsedSSHKey{}, errors.New("That is not an OpenSSH public key: it should start with ssh-ed25519, ecdsa-sha2-… or ssh-rsa.")
	}
	pk, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil || len(options) > 0 || len(strings.TrimSpace(string(rest))) > 0 || pk.Type() != typ {
		return ParsedSSHKey{}, errors.New("That is not a valid OpenSSH public key.")
	}
	if typ == ssh.KeyAlgoRSA {
		if ck, ok := pk.(ssh.CryptoPublicKey); ok {
			if rk, ok := ck.CryptoPublicKey().(interface{ Size() int }); ok && rk.Size()*8 < MinRSABits {
				return ParsedSSHKey{}, fmt.Errorf("RSA keys must have at least %d bits: use ssh-keygen -t ed25519.", MinRSABits)
			}
		}
	}
	comment = strings.TrimSpace(comment)
	for _, r := range comment {
		if r < 0x20 || r == 0x7f {
			return ParsedSSHKey{}, errors.New("The key's comment contains control characters.")
		}
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
	if comment != "" {
		line += " " + comment
	}
	return ParsedSSHKey{Type: typ, Line: line, Fingerprint: ssh.FingerprintSHA256(pk), Comment: comment}, nil
}

// AddSSHKey validates and stores a public key for the user in the org. An
// empty name takes the key's comment.
func (s *Store) AddSSHKey(ctx context.Context, orgID, userID, name, publicKey string) (SSHKey, error) {
	name = strings.TrimSpace(name)
	fe := FieldErrors{}
	k, err := ParseSSHPublicKey(publicKey)
	if err != nil {
		fe["public_key"] = err.Error()
	}
	if name == "" {
		name = truncateRunes(k.Comment, 100)
	}
	if name == "" && err == nil {
		name = k.Type + " key"
	}
	if p := NameProblem(name, 100, "a name for the key"); p != "" && err == nil {
		fe["name"] = p
	}
	if len(fe) > 0 {
		return SSHKey{}, fe
	}
	key := SSHKey{ID: NewID("ssh"), UserID: userID, OrgID: orgID, Name: name, PublicKey: k.Line,
		Fingerprint: k.Fingerprint, CreatedAt: s.Now()}
	err = s.Tx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.db.Model(&SSHKey{}).Where("org_id = ? AND user_id = ? AND fingerprint = ?", orgID, userID, k.Fingerprint).
			Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return FieldErrors{"public_key": "You have already added this key (" + k.Fingerprint + ")."}
		}
		return tx.db.Create(&key).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return SSHKey{}, FieldErrors{"public_key": "You have already added this key (" + k.Fingerprint + ")."}
	}
	return key, err
}

// SSHKeys lists the user's keys in the org, newest first.
func (s *Store) SSHKeys(ctx context.Context, orgID, userID string) ([]SSHKey, error) {
	var out []SSHKey
	err := s.db.WithContext(ctx).Where("org_id = ? AND user_id = ?", orgID, userID).
		Order("created_at DESC, id").Find(&out).Error
	return out, err
}

// SSHKeysForUser loads the keys with ids, all of which must be the user's in
// the org (ErrNotFound otherwise, as if another's did not exist). With no ids
// it returns all of the user's keys in the org.
func (s *Store) SSHKeysForUser(ctx context.Context, orgID, userID string, ids []string) ([]SSHKey, error) {
	if len(ids) == 0 {
		return s.SSHKeys(ctx, orgID, userID)
	}
	uniq := map[string]bool{}
	for _, id := range ids {
		uniq[id] = true
	}
	var out []SSHKey
	err := s.db.WithContext(ctx).Where("org_id = ? AND user_id = ? AND id IN ?", orgID, userID, ids).
		Order("created_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: ssh keys: %w", err)
	}
	if len(out) != len(uniq) {
		return nil, fmt.Errorf("models: ssh keys: %w", ErrNotFound)
	}
	return out, nil
}

// DeleteSSHKey removes one of the user's keys in the org.
func (s *Store) DeleteSSHKey(ctx context.Context, orgID, userID, id string) (SSHKey, error) {
	var k SSHKey
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ? AND user_id = ?", id, orgID, userID).Take(&k).Error
	if err != nil {
		return SSHKey{}, notFound(err, "ssh key "+id)
	}
	if err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Delete(&SSHKey{}).Error; err != nil {
		return SSHKey{}, err
	}
	return k, nil
}
