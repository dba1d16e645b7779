package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Default boot times per machine kind and the default hidden capacity of a
// location that reports only whether it has machines (O2 shows 8 there).
const (
	DefaultContainerBoot  = time.Minute
	DefaultVMBoot         = 4 * time.Minute
	DefaultBareMetalBoot  = 12 * time.Minute
	DefaultHiddenCapacity = 8
)

// Config is the simulated cloud's catalog: its locations, their offers and
// stock, and how long each machine kind takes to boot. Load it with
// LoadConfig or ParseConfig, or start from DefaultConfig.
type Config struct {
	// BootTimes is the typical boot time per machine kind ("vm",
	// "bare_metal", "container"); kinds left out use the defaults above.
	BootTimes map[string]Duration `json:"boot_times,omitempty" yaml:"boot_times,omitempty"`
	// HiddenCapacity is how many machines of an offer without a counted
	// stock can be placed before it runs out (default 8).
	HiddenCapacity int        `json:"hidden_capacity,omitempty" yaml:"hidden_capacity,omitempty"`
	Locations      []Location `json:"locations" yaml:"locations"`
}

// Location is one datacenter (or community host pool) and what it sells.
type Location struct {
	ID   string `json:"id" yaml:"id"`     // provider-native id, e.g. "us-east-1"
	Name string `json:"name" yaml:"name"` // human label, e.g. "Ashburn, VA, US"
	// Community marks community hosts rather than a datacenter (O5).
	Community bool `json:"community,omitempty" yaml:"community,omitempty"`
	// Gateway is the "user@host:port" SSH gateway of a location whose
	// machines have no public addresses. Empty means public IPs (N5).
	Gateway string        `json:"gateway,omitempty" yaml:"gateway,omitempty"`
	Offers  []OfferConfig `json:"offers" yaml:"offers"`
}

// OfferConfig is one machine shape sold in a location, with its stock.
// Prices are integer micro-dollars.
type OfferConfig struct {
	ID           string `json:"id" yaml:"id"` // unique across the whole config
	Accelerator  string `json:"accelerator" yaml:"accelerator"`
	MachineKind  string `json:"machine_kind" yaml:"machine_kind"`
	Interconnect string `json:"interconnect" yaml:"interconnect"`
	// NICs and NICGbps: the machine's fabric cards and each one's line rate
	// (providers.Offer); none for an Ethernet overlay.
	NICs          int   `json:"nics,omitempty" yaml:"nics,omitempty"`
	NICGbps       int   `json:"nic_gbps,omitempty" yaml:"nic_gbps,omitempty"`
	GPUsPerNode   int   `json:"gpus_per_node" yaml:"gpus_per_node"`
	VCPUs         int   `json:"vcpus" yaml:"vcpus"`
	MemoryGB      int   `json:"memory_gb" yaml:"memory_gb"`
	PerGPUHourUSD int64 `json:"per_gpu_hour_usd" yaml:"per_gpu_hour_usd"`
	RootDiskGB    int   `json:"root_disk_gb" yaml:"root_disk_gb"`
	DiskGBHourUSD int64 `json:"disk_gb_hour_usd" yaml:"disk_gb_hour_usd"`
	// NodesAvailable is the counted free-machine stock. Leave it out (null)
	// for a location that only says yes or no; Available then tells which
	// (default yes) and HiddenCapacity how many can really be placed.
	NodesAvailable *int  `json:"nodes_available" yaml:"nodes_available"`
	Available      *bool `json:"available,omitempty" yaml:"available,omitempty"`
	HiddenCapacity int   `json:"hidden_capacity,omitempty" yaml:"hidden_capacity,omitempty"`
	// BootTime overrides the machine kind's boot time for this offer.
	BootTime Duration `json:"boot_time,omitempty" yaml:"boot_time,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("4m",
// "90s") in JSON and YAML. A bare JSON number is read as seconds.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.parse(s)
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration must be a string like \"4m\" or a number of seconds, got %s", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a scalar", n.Line)
	}
	if secs, err := strconv.ParseFloat(n.Value, 64); err == nil {
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	if err := d.parse(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. \"90s\", \"4m\")", s)
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads and validates a config file; ".json" files are JSON,
// ".yaml" and ".yml" files YAML. Unknown fields are errors.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("sim: load config: %w", err)
	}
	var format string
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		format = "json"
	case ".yaml", ".yml":
		format = "yaml"
	default:
		return Config{}, fmt.Errorf("sim: load config %s: unknown extension (want .json, .yaml or .yml)", path)
	}
	cfg, err := ParseConfig(data, format)
	if err != nil {
		return Config{}, fmt.Errorf("%w (in %s)", err, path)
	}
	return cfg, nil
}

// ParseConfig decodes and validates a config in format "json" or "yaml".
func ParseConfig(data []byte, format string) (Config, error) {
	var cfg Config
	switch format {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return Config{}, fmt.Errorf("sim: config: %w", err)
		}
	case "yaml":
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			return Config{}, fmt.Errorf("sim: config: %w", err)
		}
	default:
		return Config{}, fmt.Errorf("sim: config: unknown format %q (want json or yaml)", format)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate reports every problem of the config at once, each prefixed by
// where it is ("locations[2].offers[0] (us-west-1.h100...)").
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for kind, d := range c.BootTimes {
		if !validKind(kind) {
			add("boot_times: unknown machine kind %q (want vm, bare_metal or container)", kind)
		}
		if d <= 0 {
			add("boot_times[%s]: must be positive, got %s", kind, d)
		}
	}
	if c.HiddenCapacity < 0 {
		add("hidden_capacity: must not be negative, got %d", c.HiddenCapacity)
	}
	if len(c.Locations) == 0 {
		add("locations: at least one location is required")
	}
	locIDs := map[string]bool{}
	offerIDs := map[string]string{}
	for i, l := range c.Locations {
		where := fmt.Sprintf("locations[%d] (%s)", i, l.ID)
		if l.ID == "" {
			add("locations[%d]: id is required", i)
		} else if locIDs[l.ID] {
			add("%s: duplicate location id %q", where, l.ID)
		}
		locIDs[l.ID] = true
		if l.Name == "" {
			add("%s: name is required", where)
		}
		if l.Gateway != "" && !validGateway(l.Gateway) {
			add("%s: gateway %q must look like user@host:port", where, l.Gateway)
		}
		for j, o := range l.Offers {
			ow := fmt.Sprintf("locations[%d].offers[%d] (%s)", i, j, o.ID)
			if prev, dup := offerIDs[o.ID]; dup && o.ID != "" {
				add("%s: duplicate offer id %q (also in location %s)", ow, o.ID, prev)
			}
			offerIDs[o.ID] = l.ID
			for _, err := range o.validate() {
				errs = append(errs, fmt.Errorf("%s: %w", ow, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sim: invalid config:\n%w", errors.Join(errs...))
	}
	return nil
}

// validate checks one offer on its own.
func (o OfferConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.ID == "" {
		add("id is required")
	}
	if o.Accelerator == "" {
		add("accelerator is required")
	}
	if !validKind(o.MachineKind) {
		add("unknown machine_kind %q (want vm, bare_metal or container)", o.MachineKind)
	}
	switch o.Interconnect {
	case providers.Ethernet, providers.InfiniBand, providers.RoCE:
	default:
		add("unknown interconnect %q (want ethernet, infiniband or roce)", o.Interconnect)
	}
	errs = append(errs, providers.CheckFabricCards(o.Interconnect, o.NICs, o.NICGbps)...)
	switch o.GPUsPerNode {
	case 1, 2, 4, 8:
	default:
		add("gpus_per_node must be 1, 2, 4 or 8, got %d", o.GPUsPerNode)
	}
	if o.VCPUs <= 0 {
		add("vcpus must be positive, got %d", o.VCPUs)
	}
	if o.MemoryGB <= 0 {
		add("memory_gb must be positive, got %d", o.MemoryGB)
	}
	if o.PerGPUHourUSD <= 0 {
		add("per_gpu_hour_usd must be a positive number of micro-dollars, got %d", o.PerGPUHourUSD)
	}
	if o.RootDiskGB <= 0 {
		add("root_disk_gb must be positive, got %d", o.RootDiskGB)
	}
	if o.DiskGBHourUSD < 0 {
		add("disk_gb_hour_usd must not be negative, got %d", o.DiskGBHourUSD)
	}
	if o.NodesAvailable != nil && *o.NodesAvailable < 0 {
		add("nodes_available must not be negative, got %d", *o.NodesAvailable)
	}
	if o.NodesAvailable != nil && o.Available != nil {
		add("set nodes_available (a count) or available (yes/no), not both")
	}
	if o.HiddenCapacity < 0 {
		add("hidden_capacity must not be negative, got %d", o.HiddenCapacity)
	}
	if o.BootTime < 0 {
		add("boot_time must not be negative, got %s", o.BootTime)
	}
	return errs
}

func validKind(k string) bool {
	return k == providers.VM || k == providers.BareMetal || k == providers.Container
}

// validGateway accepts "user@host:port".
func validGateway(g string) bool {
	user, hostport, ok := strings.Cut(g, "@")
	if !ok || user == "" {
		return false
	}
	host, port, ok := strings.Cut(hostport, ":")
	if !ok || host == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}

// bootTime is the boot time of one offer: its override, else its kind's.
func (c Config) bootTime(o OfferConfig) time.Duration {
	if o.BootTime > 0 {
		return o.BootTime.D()
	}
	if d, ok := c.BootTimes[o.MachineKind]; ok && d > 0 {
		return d.D()
	}
	switch o.MachineKind {
	case providers.Container:
		return DefaultContainerBoot
	case providers.BareMetal:
		return DefaultBareMetalBoot
	default:
		return DefaultVMBoot
	}
}

// hiddenCapacity is how many machines an uncounted offer really has.
func (c Config) hiddenCapacity(o OfferConfig) int {
	if o.HiddenCapacity > 0 {
		return o.HiddenCapacity
	}
	if c.HiddenCapacity > 0 {
		return c.HiddenCapacity
	}
	return DefaultHiddenCapacity
}
