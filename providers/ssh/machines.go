// Package ssh sells machines an operator already owns (OP1): they are
// listed in a file (SSH_MACHINES_FILE, YAML or JSON), offered with counted
// stock, and placed by connecting over SSH, copying the agent binary and
// starting `clusterdeck agent --server URL --token T` on each. Terminate
// stops the agent and what it started and removes the cluster's files.
// Like dstack's SSH fleets and SkyPilot's SSH node pools.
package ssh

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Machine is one machine the operator owns, as listed in the machines file.
type Machine struct {
	// Name identifies the machine; unique, [a-z0-9-], it is the node id.
	Name string `json:"name" yaml:"name"`
	Host string `json:"host" yaml:"host"`
	Port int    `json:"port" yaml:"port"` // default 22
	User string `json:"user" yaml:"user"` // root, or a user with passwordless sudo
	// KeyPath is the private key the server logs in with (never logged).
	KeyPath string `json:"key_path" yaml:"key_path"`
	// PrivateKey is the key itself, for machines added on the admin page
	// with a pasted key (never in a file, never logged); it wins over KeyPath.
	PrivateKey []byte `json:"-" yaml:"-"`
	// HostKey is the machine's SSH host key in authorized_keys form
	// ("ssh-ed25519 AAAA…"); empty means trust on first use, recorded in
	// the state file and enforced from then on.
	HostKey string `json:"host_key" yaml:"host_key"`
	// PrivateIP is its address on the network the machines share; default Host.
	PrivateIP string `json:"private_ip" yaml:"private_ip"`

	GPUs         int    `json:"gpus" yaml:"gpus"`
	Accelerator  string `json:"accelerator" yaml:"accelerator"` // e.g. "H100_80GB"; "CPU" when GPUs is 0
	VCPUs        int    `json:"vcpus" yaml:"vcpus"`
	MemoryGB     int    `json:"memory_gb" yaml:"memory_gb"`
	RootDiskGB   int    `json:"root_disk_gb" yaml:"root_disk_gb"`
	Location     string `json:"location" yaml:"location"`           // e.g. "office-rack-1"
	LocationName string `json:"location_name" yaml:"location_name"` // e.g. "Berlin office"
	Kind         string `json:"kind" yaml:"kind"`                   // vm or bare_metal (default bare_metal)
	Interconnect string `json:"interconnect" yaml:"interconnect"`   // ethernet (default), infiniband, roce
	// NICs and NICGbps: the machine's fabric cards and each one's line rate
	// in Gbit/s (e.g. 8 and 400); none on Ethernet.
	NICs    int `json:"nics,omitempty" yaml:"nics,omitempty"`
	NICGbps int `json:"nic_gbps,omitempty" yaml:"nic_gbps,omitempty"`
	// PricePerHour is what one machine costs per hour in US dollars, as a
	// decimal string ("2.50"); it is sold per GPU-hour (per machine-hour
	// without GPUs).
	PricePerHour string `json:"price_per_hour" yaml:"price_per_hour"`

	priceMicros int64
}

// File is the machines file.
type File struct {
	Machines []Machine `json:"machines" yaml:"machines"`
}

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// LoadFile reads and validates a machines file (.json, .yaml or .yml).
func LoadFile(path string) ([]Machine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh: machines file: %w", err)
	}
	var f File
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		err = dec.Decode(&f)
	case ".yaml", ".yml":
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		err = dec.Decode(&f)
	default:
		return nil, fmt.Errorf("ssh: machines file %s: unknown extension (want .json, .yaml or .yml)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh: machines file %s: %w", path, err)
	}
	if err := Validate(f.Machines); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return f.Machines, nil
}

// Validate checks every machine and fills defaults in place; the error
// names every problem with the machine it belongs to.
func Validate(ms []Machine) error {
	var errs []error
	seen := map[string]bool{}
	for i := range ms {
		m := &ms[i]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("ssh: machine %d (%s): %s", i+1, m.Name, fmt.Sprintf(format, args...)))
		}
		if !nameRe.MatchString(m.Name) {
			bad("name must be 1–63 of a-z, 0-9 and -")
		} else if seen[m.Name] {
			bad("name is used twice")
		}
		seen[m.Name] = true
		if m.Host == "" {
			bad("host is required")
		}
		if m.Port == 0 {
			m.Port = 22
		}
		if m.Port < 1 || m.Port > 65535 {
			bad("port %d is not a TCP port", m.Port)
		}
		if m.User == "" {
			m.User = "root"
		}
		if m.KeyPath == "" && len(m.PrivateKey) == 0 {
			bad("key_path is required")
		}
		if m.HostKey != "" {
			if _, _, _, _, err := parseAuthorizedKey(m.HostKey); err != nil {
				bad("host_key: %v", err)
			}
		}
		if m.PrivateIP == "" {
			m.PrivateIP = m.Host
		}
		if m.GPUs < 0 || m.GPUs > 64 {
			bad("gpus %d is out of range 0–64", m.GPUs)
		}
		if m.Accelerator == "" {
			if m.GPUs > 0 {
				bad("accelerator is required with GPUs")
			}
			m.Accelerator = "CPU"
		}
		if m.Location == "" {
			bad("location is required")
		}
		if m.LocationName == "" {
			m.LocationName = m.Location
		}
		switch m.Kind {
		case "":
			m.Kind = "bare_metal"
		case "vm", "bare_metal":
		default:
			bad("kind must be vm or bare_metal, not %q", m.Kind)
		}
		switch m.Interconnect {
		case "":
			m.Interconnect = "ethernet"
		case "ethernet", "infiniband", "roce":
		default:
			bad("interconnect must be ethernet, infiniband or roce, not %q", m.Interconnect)
		}
		for _, err := range providers.CheckFabricCards(m.Interconnect, m.NICs, m.NICGbps) {
			bad("%v", err)
		}
		p, err := parseUSD(m.PricePerHour)
		if err != nil {
			bad("price_per_hour: %v", err)
		}
		if err == nil && m.GPUs > 0 && p%int64(m.GPUs) != 0 {
			bad("price_per_hour %s does not split into whole micro-dollars over %d GPUs (offers are priced per GPU-hour)", m.PricePerHour, m.GPUs)
		}
		m.priceMicros = p
	}
	return errors.Join(errs...)
}

// parseUSD reads a non-negative decimal dollar amount with at most six
// decimals into micro-dollars, exactly.
func parseUSD(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an amount in dollars like \"2.50\"", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1_000_000 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return w*1_000_000 + f, nil
}
