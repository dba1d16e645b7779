package models

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"
)

// SSHMachine is a machine the operator owns, added on the admin page and
// sold by the ssh provider beside those of its machines file (OP1). A
// pasted private key is stored sealed (AES-256-GCM under MachineKeySecret,
// bound to the machine's name) and never shown back; KeyPath names a key
// file on the server instead.
type SSHMachine struct {
	ID           string `gorm:"primaryKey;size:32"`
	Name         string `gorm:"size:63;uniqueIndex"`
	Host         string `gorm:"size:255"`
	Port         int
	User         string `gorm:"column:ssh_user;size:32"`
	KeyPath      string `gorm:"size:1000"`
	KeySealed    string `gorm:"type:text"` // base64 of nonce ‖ ciphertext; "" with KeyPath
	HostKey      string `gorm:"size:2000"` // authorized_keys form; "" = trusted on first use
	GPUs         int    `gorm:"column:gpus"`
	Accelerator  string `gorm:"size:64"` // "CPU" without GPUs
	VCPUs        int    `gorm:"column:vcpus"`
	MemoryGB     int    `gorm:"column:memory_gb"`
	RootDiskGB   int    `gorm:"column:root_disk_gb"`
	Location     string `gorm:"size:64"`
	LocationName string `gorm:"size:191"`
	PricePerHour Money  `gorm:"column:price_per_hour"` // one machine-hour, micro-dollars
	CreatedBy    string `gorm:"size:300"`
	CreatedAt    time.Time
}

func up0880SshMachines(tx *gorm.DB) error {
	type sshMachine struct {
		ID           string `gorm:"primaryKey;size:32"`
		Name         string `gorm:"size:63;uniqueIndex:idx_ssh_machines_name"`
		Host         string `gorm:"size:255"`
		Port         int
		User         string `gorm:"column:ssh_user;size:32"`
		KeyPath      string `gorm:"size:1000"`
		KeySealed    string `gorm:"type:text"`
		HostKey      string `gorm:"size:2000"`
		GPUs         int    `gorm:"column:gpus"`
		Accelerator  string `gorm:"size:64"`
		VCPUs        int    `gorm:"column:vcpus"`
		MemoryGB     int    `gorm:"column:memory_gb"`
		RootDiskGB   int    `gorm:"column:root_disk_gb"`
		Location     string `gorm:"size:64"`
		LocationName string `gorm:"size:191"`
		PricePerHour int64  `gorm:"column:price_per_hour"`
		CreatedBy    string `gorm:"size:300"`
		CreatedAt    time.Time
	}
	return tx.Table("ssh_machines").Migrator().CreateTable(&sshMachine{})
}

// SSHProvider is the ssh provider's name, on its offers and clusters.
const SSHProvider = "ssh"

// MaxMachinePrice bounds a machine's price per hour ($1,000): a typo guard.
const MaxMachinePrice Money = 1_000 * Micro

// SSHMachineInput is the add-machine form as typed.
type SSHMachineInput struct {
	Name, Host, Port, User            string
	KeyPath, PrivateKey, HostKey      string
	GPUs, Accelerator                 string
	VCPUs, MemoryGB, RootDiskGB       string
	Location, LocationName, PriceHour string
}

var (
	machineNameRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	machineHostRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$`)
	machineUserRe     = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)
	machineLocationRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// parseSSHMachine validates in; taken are the names already used (the
// machines file's and the stored ones).
func parseSSHMachine(in SSHMachineInput, taken []string) (SSHMachine, FieldErrors) {
	fe := FieldErrors{}
	m := SSHMachine{Name: strings.TrimSpace(in.Name), Host: strings.TrimSpace(in.Host), User: strings.TrimSpace(in.User),
		KeyPath: strings.TrimSpace(in.KeyPath), HostKey: strings.TrimSpace(in.HostKey), Accelerator: strings.TrimSpace(in.Accelerator),
		Location: strings.TrimSpace(in.Location), LocationName: strings.TrimSpace(in.LocationName)}
	switch {
	case !machineNameRe.MatchString(m.Name):
		fe["name"] = "Use 1–63 of a–z, 0–9 and - (it names the machine in clusters)."
	case slices.Contains(taken, m.Name):
		fe["name"] = "A machine is already called " + m.Name + "."
	}
	if !machineHostRe.MatchString(m.Host) {
		fe["host"] = "Enter the host name or IP address the server reaches its SSH port on."
	}
	num := func(field, s string, def, lo, hi int, msg string) int {
		s = strings.TrimSpace(s)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			fe[field] = msg
		}
		return n
	}
	m.Port = num("port", in.Port, 22, 1, 65535, "Enter a TCP port from 1 to 65535 (22 by default).")
	if m.User == "" {
		m.User = "root"
	} else if !machineUserRe.MatchString(m.User) {
		fe["user"] = "Enter a Unix user name: root, or a user with passwordless sudo."
	}
	key := strings.TrimSpace(in.PrivateKey)
	switch {
	case key != "" && m.KeyPath != "":
		fe["key"] = "Give a key path on the server or paste a private key, not both."
	case key == "" && m.KeyPath == "":
		fe["key"] = "Give the path of a private key on the server, or paste one."
	case m.KeyPath != "":
		if !filepath.IsAbs(m.KeyPath) || filepath.Clean(m.KeyPath) != m.KeyPath || len(m.KeyPath) > 1000 || !CleanString(m.KeyPath) {
			fe["key"] = "Enter an absolute path like /etc/clusterdeck/id_ed25519."
		}
	case len(key) > 16<<10:
		fe["key"] = "That is too long for an SSH private key."
	default:
		if _, err := ssh.ParsePrivateKey([]byte(key + "\n")); err != nil {
			var pp *ssh.PassphraseMissingError
			if errors.As(err, &pp) {
				fe["key"] = "The key has a passphrase; paste one without (ssh-keygen -p -N '' -f KEY)."
			} else {
				fe["key"] = "Paste an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY----- …)."
			}
		}
	}
	if m.HostKey != "" {
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(m.HostKey)); err != nil || strings.ContainsAny(m.HostKey, "\r\n") {
			fe["host_key"] = "Paste one public key line like ssh-ed25519 AAAA…, or leave it empty to trust the first key seen."
		}
	}
	m.GPUs = num("gpus", in.GPUs, 0, 0, 64, "Enter the number of GPUs, 0 to 64.")
	switch {
	case m.GPUs > 0 && !slices.Contains(Accelerators, m.Accelerator):
		fe["accelerator"] = "Choose the GPU model: one of " + strings.Join(Accelerators, ", ") + "."
	case m.GPUs == 0 && m.Accelerator != "" && m.Accelerator != "CPU":
		fe["accelerator"] = "A machine without GPUs has no GPU model."
	case m.GPUs == 0:
		m.Accelerator = "CPU"
	}
	m.VCPUs = num("vcpus", in.VCPUs, 0, 0, 4096, "Enter the number of vCPUs, up to 4096 (or leave it empty).")
	m.MemoryGB = num("memory_gb", in.MemoryGB, 0, 0, 1<<20, "Enter the memory in GB (or leave it empty).")
	m.RootDiskGB = num("root_disk_gb", in.RootDiskGB, 0, 0, 1<<20, "Enter the root disk in GB (or leave it empty).")
	if !machineLocationRe.MatchString(m.Location) {
		fe["location"] = "Enter a location id like rack-1 (letters, digits, . _ -): alike machines in one location are one offer."
	}
	if m.LocationName == "" {
		m.LocationName = m.Location
	} else if utf8.RuneCountInString(m.LocationName) > 100 || !CleanString(m.LocationName) || strings.ContainsAny(m.LocationName, "\r\n") {
		fe["location_name"] = "Use one line of at most 100 characters."
	}
	price, err := ParseUSD(in.PriceHour)
	switch {
	case err != nil || price <= 0:
		fe["price"] = "Enter the price of one machine-hour in dollars, like 20 or 2.50."
	case price > MaxMachinePrice:
		fe["price"] = "At most $1,000 per machine-hour."
	case m.GPUs > 0 && price%Money(m.GPUs) != 0:
		fe["price"] = "The price must split into whole millionths of a dollar over " + strconv.Itoa(m.GPUs) + " GPUs (it is sold per GPU-hour)."
	}
	m.PricePerHour = price
	if len(fe) > 0 {
		return m, fe
	}
	return m, nil
}

// sealMachineKey seals a pasted private key for the machine called name.
func (s *Store) sealMachineKey(name, key string) (string, error) {
	aead, err := machineKeyAEAD(s.settings.MachineKeySecret)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(key), []byte("ssh-machine:"+name))), nil
}

// SSHMachineKey opens m's pasted private key; nil with a KeyPath. It fails
// when the secret changed since the key was pasted.
func (s *Store) SSHMachineKey(m SSHMachine) ([]byte, error) {
	if m.KeySealed == "" {
		return nil, nil
	}
	aead, err := machineKeyAEAD(s.settings.MachineKeySecret)
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(m.KeySealed)
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, fmt.Errorf("models: the key of machine %s is not readable", m.Name)
	}
	key, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte("ssh-machine:"+m.Name))
	if err != nil {
		return nil, fmt.Errorf("models: the key of machine %s does not open with this secret (was it pasted under another SESSION_ENC_KEY?)", m.Name)
	}
	return key, nil
}

func machineKeyAEAD(secret []byte) (cipher.AEAD, error) {
	if len(secret) != 32 {
		return nil, errors.New("models: no secret to seal machine keys with")
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// SSHMachines lists the machines added on the admin page, by name.
func (s *Store) SSHMachines(ctx context.Context) ([]SSHMachine, error) {
	var out []SSHMachine
	if err := s.db.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: ssh machines: %w", err)
	}
	return out, nil
}

// AddSSHMachine stores a machine the operator owns (OP1) and audits it
// (ssh_machine.add); fileNames are the machines file's names, which a new
// machine may not take. The ssh provider sells it from its next catalog run.
func (x Actions) AddSSHMachine(ctx context.Context, in SSHMachineInput, fileNames []string) (SSHMachine, error) {
	var stored []string
	if err := x.s.db.WithContext(ctx).Model(&SSHMachine{}).Pluck("name", &stored).Error; err != nil {
		return SSHMachine{}, fmt.Errorf("models: ssh machine names: %w", err)
	}
	m, fe := parseSSHMachine(in, append(stored, fileNames...))
	if fe != nil {
		return m, fe
	}
	if key := strings.TrimSpace(in.PrivateKey); key != "" {
		sealed, err := x.s.sealMachineKey(m.Name, key+"\n")
		if err != nil {
			return m, FieldErrors{"key": "Pasted keys cannot be stored here (no secret is configured); give a key path on the server."}
		}
		m.KeySealed = sealed
	}
	m.ID, m.CreatedBy = NewID("sshm"), x.a.Name
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		m.CreatedAt = tx.Now()
		if err := tx.db.WithContext(ctx).Create(&m).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, FieldErrors{"name": "A machine is already called " + m.Name + "."}
			}
			return nil, fmt.Errorf("models: add ssh machine: %w", err)
		}
		return x.audit("ssh_machine.add", m.Name, fmt.Sprintf("%s@%s:%d, %d× %s in %s, $%s/h", m.User, m.Host, m.Port,
			m.GPUs, m.Accelerator, m.Location, DecimalUSD(m.PricePerHour))), nil
	})
	return m, err
}

// MachineInUseError refuses to remove a machine a cluster uses.
type MachineInUseError struct{ Machine, ClusterID string }

func (e *MachineInUseError) Error() string {
	if e.ClusterID == "" {
		return "A cluster on your machines is being placed right now; remove " + e.Machine + " once it is placed."
	}
	return "Machine " + e.Machine + " is used by cluster " + e.ClusterID + "; terminate the cluster first."
}

func (e *MachineInUseError) Unwrap() error { return ErrConflict }

// RemoveSSHMachine deletes a machine added on the admin page and audits it
// (ssh_machine.remove). It is refused (*MachineInUseError) while a cluster
// holds the machine, or while an ssh cluster is being placed and has not yet
// said which machines it took.
func (x Actions) RemoveSSHMachine(ctx context.Context, name string) error {
	return x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var m SSHMachine
		if err := tx.db.WithContext(ctx).Where("name = ?", name).Take(&m).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, ErrNotFound
			}
			return nil, fmt.Errorf("models: ssh machine %s: %w", name, err)
		}
		if err := tx.machineInUse(ctx, name); err != nil {
			return nil, err
		}
		res := tx.db.WithContext(ctx).Where("id = ?", m.ID).Delete(&SSHMachine{})
		if res.Error != nil {
			return nil, fmt.Errorf("models: remove ssh machine %s: %w", name, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil, ErrNotFound
		}
		return x.audit("ssh_machine.remove", name, fmt.Sprintf("%s@%s:%d", m.User, m.Host, m.Port)), nil
	})
}

// machineInUse is a *MachineInUseError when a cluster of the ssh provider
// whose machines are not yet released holds machine name, or is still
// being placed (its machines not yet recorded).
func (s *Store) machineInUse(ctx context.Context, name string) error {
	holding := s.db.WithContext(ctx).Table("clusters").Where("clusters.provider = ? AND clusters.released_at IS NULL AND clusters.status <> ?",
		SSHProvider, StatusTerminated)
	var ids []string
	if err := holding.Session(&gorm.Session{}).Joins("JOIN cluster_nodes ON cluster_nodes.cluster_id = clusters.id").
		Where("cluster_nodes.provider_node_id = ?", name).Order("clusters.id").Limit(1).Pluck("clusters.id", &ids).Error; err != nil {
		return fmt.Errorf("models: clusters on machine %s: %w", name, err)
	}
	if len(ids) > 0 {
		return &MachineInUseError{Machine: name, ClusterID: ids[0]}
	}
	var placing int64
	if err := holding.Session(&gorm.Session{}).Where("clusters.status = ? AND clusters.placed_at IS NULL", StatusProvisioning).
		Count(&placing).Error; err != nil {
		return fmt.Errorf("models: ssh clusters being placed: %w", err)
	}
	if placing > 0 {
		return &MachineInUseError{Machine: name}
	}
	return nil
}
