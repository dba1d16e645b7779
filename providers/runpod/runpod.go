// Package runpod adapts RunPod's REST API v2 (pods) to providers.Provider
// (OP1).
//
// RunPod sells a GPU type × GPU count per pod in a data center, with a
// NONE/LOW/MEDIUM/HIGH stock level rather than a count. A pod is one
// container on one host, so a group of N machines is N pods created one by
// one in one data center, each named "<group>-<index>" and carrying the
// group and its rank in its environment; when any create fails, every pod
// of the group is deleted before the error is returned (all or nothing at
// our level), and a retried placement adopts the pods it finds.
//
// Instant Clusters (POST /v2/clusters) would place the group in one call,
// but every member pod gets the same container settings, while each of our
// machines needs its own agent token; they are not used until agents can
// claim their rank with a cluster-wide token.
package runpod

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/httpx"
)

// Name is the provider's stable identifier.
const Name = "runpod"

// DefaultBaseURL is RunPod's REST v2 server.
const DefaultBaseURL = "https://api.runpod.io"

// DefaultImage is the container image of pods whose placement names none:
// the spec's example PyTorch image (Ubuntu 24.04, CUDA 12.8).
const DefaultImage = "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404"

// Environment variables every pod we create carries: its group and rank.
const (
	EnvGroup = "CLUSTERDECK_GROUP"
	EnvIndex = "CLUSTERDECK_INDEX"
)

// BootTime is the typical time from create to a reachable pod (image pull included).
const BootTime = 8 * time.Minute

// SSHUser is the login of a pod's direct SSH endpoint.
const SSHUser = "root"

// GPUCounts are the pod sizes offered, each up to the GPU type's maxCount.
var GPUCounts = []int{1, 2, 4, 8}

// Config configures the adapter. APIKey and Agent.URL are required.
type Config struct {
	APIKey      string   // RUNPOD_API_KEY; sent as a Bearer token, never logged
	BaseURL     string   // default DefaultBaseURL
	DataCenters []string // RUNPOD_DATACENTERS: data center ids sold; empty = every one listed
	Image       string   // default image when a placement names none (default DefaultImage)
	DiskGB      int      // container disk per pod (default 50)
	Agent       bootstrap.AgentInstall

	HTTPClient *http.Client
	Now        func() time.Time
	Sleep      func(context.Context, time.Duration) error
	Retries    int           // transient retries per request (default 4; negative = none)
	Backoff    time.Duration // first retry delay (default 2 s)
}

// String never shows the key.
func (c Config) String() string {
	return fmt.Sprintf("runpod.Config{BaseURL: %q, DataCenters: %v, APIKey: [redacted]}", c.BaseURL, c.DataCenters)
}

// Cloud is the RunPod adapter. It is safe for concurrent use.
type Cloud struct {
	cfg     Config
	c       *client
	allowed map[string]bool // nil = all

	mu     sync.Mutex
	groups map[string]*sync.Mutex
	// keys serialises read-modify-write of the account's SSH keys (PUT
	// replaces the whole set: two placements at once would drop a key).
	keys sync.Mutex
}

var _ providers.Provider = (*Cloud)(nil)

// New returns the adapter for cfg.
func New(cfg Config) (*Cloud, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("runpod: an API key is required")
	}
	if err := cfg.Agent.Validate(); err != nil {
		return nil, fmt.Errorf("runpod: %w", err)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.DiskGB <= 0 {
		cfg.DiskGB = 50
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = httpx.NewClient()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = httpx.Sleep
	}
	if cfg.Retries == 0 {
		cfg.Retries = 4
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	r := &Cloud{cfg: cfg, c: &client{base: strings.TrimRight(cfg.BaseURL, "/"), key: cfg.APIKey, http: cfg.HTTPClient,
		now: cfg.Now, sleep: cfg.Sleep, retries: cfg.Retries, backoff: cfg.Backoff}}
	if len(cfg.DataCenters) > 0 {
		r.allowed = map[string]bool{}
		for _, dc := range cfg.DataCenters {
			r.allowed[dc] = true
		}
	}
	return r, nil
}

// Name is "runpod".
func (r *Cloud) Name() string { return Name }

func (r *Cloud) lock(group string) func() {
	r.mu.Lock()
	if r.groups == nil {
		r.groups = map[string]*sync.Mutex{}
	}
	m, ok := r.groups[group]
	if !ok {
		m = &sync.Mutex{}
		r.groups[group] = m
	}
	r.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// OfferID is "<data center>/<GPU count>x/<GPU type id>" (GPU type ids hold
// spaces but no slash: "NVIDIA GeForce RTX 4090").
func OfferID(dc string, count int, gpu string) string {
	return dc + "/" + strconv.Itoa(count) + "x/" + gpu
}

func parseOfferID(id string) (dc string, count int, gpu string, ok bool) {
	parts := strings.SplitN(id, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" || !strings.HasSuffix(parts[1], "x") {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(parts[1], "x"))
	return parts[0], n, parts[2], err == nil && n > 0
}

// catalog is the secure cloud's GPU types with their stock for pods of count GPUs.
func (r *Cloud) catalog(ctx context.Context, op string, count int) ([]GpuType, error) {
	q := url.Values{"include": {"AVAILABILITY"}, "product": {"POD"}, "count": {strconv.Itoa(count)}, "cloud": {"SECURE"}}
	var out struct {
		GPUs []GpuType `json:"gpus"`
	}
	if err := r.c.do(ctx, op, http.MethodGet, pathGPUs+"?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.GPUs, nil
}

// ListOffers returns one offer per GPU type, pod size and allowed data
// center. RunPod's stock is a level (NONE, LOW, MEDIUM, HIGH), not a count,
// so NodesAvailable is nil and Available is "not NONE" (O1); the stock is
// asked per pod size, as it differs by size. Prices are the secure cloud's
// per GPU-hour, the same in every data center.
func (r *Cloud) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	var offers []providers.Offer
	for _, n := range GPUCounts {
		gpus, err := r.catalog(ctx, opListOffers, n)
		if err != nil {
			return nil, err
		}
		for _, g := range gpus {
			if !g.Secure || g.MaxCount.Secure < n || g.Price.Secure <= 0 {
				continue
			}
			for _, dc := range g.DataCenters {
				if r.allowed != nil && !r.allowed[dc.ID] {
					continue
				}
				offers = append(offers, r.offer(g, n, dc))
			}
		}
	}
	sort.Slice(offers, func(a, b int) bool { return offers[a].OfferID < offers[b].OfferID })
	return offers, nil
}

func (r *Cloud) offer(g GpuType, n int, dc DataCenterAvailability) providers.Offer {
	name := dc.Name
	if name == "" {
		name = dc.ID
	}
	return providers.Offer{Provider: Name, OfferID: OfferID(dc.ID, n, g.ID), Location: dc.ID, LocationName: name,
		Interconnect: providers.Ethernet, MachineKind: providers.Container, Accelerator: accelerator(g),
		GPUsPerNode: n, PerGPUHourUSD: microUSD(g.Price.Secure), RootDiskGB: r.cfg.DiskGB,
		Available: dc.Availability != "" && dc.Availability != AvailNone, BootTime: BootTime, PublicIPs: true}
}

// microUSD turns dollars into micro-dollars, rounded up so nothing is sold below its price.
func microUSD(usd float64) int64 { return int64(math.Ceil(usd*1e6 - 1e-6)) }

// accelerator turns {name "RTX 4090", memory 24} into "RTX_4090" and
// {name "H100 SXM", memory 80} into "H100_80GB": the form factor is
// dropped, as the other providers' names have none (Lambda's
// "H100 (80 GB SXM5)" is H100_80GB too), so offers compare across providers.
func accelerator(g GpuType) string {
	name := strings.TrimSpace(g.Name)
	if name == "" {
		name = strings.TrimPrefix(g.ID, "NVIDIA ")
	}
	words := strings.Fields(name)
	for len(words) > 1 && formFactors[strings.ToUpper(words[len(words)-1])] {
		words = words[:len(words)-1]
	}
	return providers.AcceleratorName(strings.Join(words, " "), g.Memory)
}

var formFactors = map[string]bool{"SXM": true, "SXM4": true, "SXM5": true, "PCIE": true, "NVL": true}

func podName(group string, i int) string { return group + "-" + strconv.Itoa(i) }

// PlaceGroup creates req.Count pods of the offer in its data center, one
// create per pod. Pods already carrying the group are adopted. When any
// create fails, every pod of the group is deleted and the error returned.
func (r *Cloud) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	dc, n, gpu, err := r.validate(req)
	if err != nil {
		return providers.Group{}, err
	}
	defer r.lock(req.GroupName)()
	by, err := r.pods(ctx, opPlace)
	if err != nil {
		return providers.Group{}, err
	}
	have := map[int]Pod{}
	for _, p := range by[req.GroupName] {
		i, ok := index(p)
		if !ok || !alive(p) {
			continue
		}
		if p.GPU == nil || p.GPU.ID != gpu || p.GPU.Count != n || (p.DataCenterID != nil && *p.DataCenterID != dc) || i >= req.Count {
			return providers.Group{}, &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace,
				Code: "group-conflict", Location: dc, Message: fmt.Sprintf(
					"group %s already has pod %s (rank %d) that is not part of %d × %s", req.GroupName, p.ID, i, req.Count, req.OfferID)}
		}
		have[i] = p
	}
	if len(have) < req.Count {
		if err := r.createMissing(ctx, req, dc, n, gpu, have); err != nil {
			if rb := r.rollback(ctx, req.GroupName); rb != nil {
				return providers.Group{}, errors.Join(err, rb)
			}
			return providers.Group{}, err
		}
	}
	g := providers.Group{Provider: Name, Name: req.GroupName, Location: dc}
	for i := 0; i < req.Count; i++ {
		g.Nodes = append(g.Nodes, node(have[i], i))
	}
	return g, nil
}

func (r *Cloud) validate(req providers.PlaceRequest) (string, int, string, error) {
	bad := func(format string, args ...any) error {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: req.Location,
			Message: fmt.Sprintf(format, args...)}
	}
	dc, n, gpu, ok := parseOfferID(req.OfferID)
	switch {
	case !ok:
		return "", 0, "", bad("offer %q is not <data center>/<count>x/<GPU type>", req.OfferID)
	case dc != req.Location:
		return "", 0, "", bad("offer %s is sold in %s, not in %q", req.OfferID, dc, req.Location)
	case r.allowed != nil && !r.allowed[dc]:
		return "", 0, "", bad("data center %s is not enabled (RUNPOD_DATACENTERS)", dc)
	case req.Count < 1:
		return "", 0, "", bad("count %d: at least one machine", req.Count)
	case req.GroupName == "" || len(podName(req.GroupName, req.Count-1)) > 191:
		return "", 0, "", bad("group name %q is empty or too long", req.GroupName)
	case len(req.Agent.Tokens) != req.Count:
		return "", 0, "", bad("%d agent tokens for %d machines", len(req.Agent.Tokens), req.Count)
	case req.Volume != nil:
		// The adapter attaches no block volume to a machine (V4 needs one
		// on the head): refused before anything is created.
		return "", 0, "", &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: opPlace, Code: "unsupported",
			Location: req.Location, Message: "RunPod cannot attach a persistent volume to a machine; launch without a volume"}
	}
	return dc, n, gpu, nil
}

// createMissing creates every rank not in have, adding what it created.
func (r *Cloud) createMissing(ctx context.Context, req providers.PlaceRequest, dc string, n int, gpu string, have map[int]Pod) error {
	// The catalog is "a way to order candidates, not a reservation", but it
	// is cheap: refuse without creating when the data center has none.
	gpus, err := r.catalog(ctx, opPlace, n)
	if err != nil {
		return err
	}
	k := slices.IndexFunc(gpus, func(g GpuType) bool { return g.ID == gpu })
	if k < 0 || gpus[k].MaxCount.Secure < n {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: dc,
			Message: fmt.Sprintf("%d × %s is not sold", n, gpu)}
	}
	if price := int64(n) * microUSD(gpus[k].Price.Secure); req.AboveCeiling(price) {
		return providers.AboveCeiling(Name, opPlace, dc, fmt.Sprintf("a pod of %d × %s", n, gpu), price, req.MaxMachineHourUSD)
	}
	j := slices.IndexFunc(gpus[k].DataCenters, func(d DataCenterAvailability) bool { return d.ID == dc })
	if j < 0 || gpus[k].DataCenters[j].Availability == AvailNone {
		return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opPlace, Location: dc,
			Message: fmt.Sprintf("no %d × %s stock in %s", n, gpu, dc)}
	}
	if err := r.registerKeys(ctx, req.SSHKeys); err != nil {
		return err
	}
	image := req.Image
	if image == "" {
		image = r.cfg.Image
	}
	ports := []string{"22/tcp"}
	for _, p := range req.Ports {
		if p != 22 {
			ports = append(ports, strconv.Itoa(p)+"/tcp")
		}
	}
	for i := 0; i < req.Count; i++ {
		if _, ok := have[i]; ok {
			continue
		}
		w := req.Workload()
		w.Image = image
		script, err := bootstrap.Script(r.cfg.Agent, bootstrap.Foreground, req.Agent.ServerURL, req.Agent.Tokens[i], w)
		if err != nil {
			return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: dc, Message: err.Error()}
		}
		cr := CreatePodRequest{Name: podName(req.GroupName, i), Image: image, Args: ContainerArgs(script), Disk: r.cfg.DiskGB,
			Ports: ports, Env: map[string]string{EnvGroup: req.GroupName, EnvIndex: strconv.Itoa(i)}, Cloud: "SECURE",
			DataCenterIDs: []string{dc}, GPU: &GPUConfig{ID: gpu, Count: n}, StartSSH: true}
		p, err := r.create(ctx, req.GroupName, i, cr)
		if err != nil {
			var pe *providers.Error
			if errors.As(err, &pe) && pe.Location == "" {
				pe.Location = dc
			}
			return err
		}
		have[i] = p
		if p.DataCenterID != nil && *p.DataCenterID != "" && *p.DataCenterID != dc {
			return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opPlace, Location: dc,
				Message: fmt.Sprintf("pod %s was placed in %s, not %s", p.ID, *p.DataCenterID, dc)}
		}
	}
	return nil
}

// ContainerArgs is the pod's command: the start-up script, base64-encoded
// so that it survives the single args string whole.
func ContainerArgs(script string) string {
	return "sh -c 'echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh'"
}

// create creates one pod. After a transient failure the create may have
// happened: the group's pods are listed before creating again.
func (r *Cloud) create(ctx context.Context, group string, i int, cr CreatePodRequest) (Pod, error) {
	for attempt := 0; ; attempt++ {
		var p Pod
		err := r.c.do(ctx, opPlace, http.MethodPost, pathPods, cr, &p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, providers.ErrTransient) || attempt >= r.cfg.Retries {
			return Pod{}, err
		}
		by, lerr := r.pods(ctx, opPlace)
		if lerr != nil {
			return Pod{}, errors.Join(err, lerr)
		}
		for _, p := range by[group] {
			if j, ok := index(p); ok && j == i && alive(p) {
				return p, nil // the failed-looking create went through
			}
		}
		if err := r.c.sleep(ctx, r.cfg.Backoff<<attempt); err != nil {
			return Pod{}, err
		}
	}
}

// registerKeys adds the customer's keys to the account's registered set
// (PUT replaces the whole set, so the current keys are kept), which
// startSsh installs in every pod.
func (r *Cloud) registerKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	r.keys.Lock()
	defer r.keys.Unlock()
	var cur struct {
		Keys []string `json:"keys"`
	}
	if err := r.c.do(ctx, opPlace, http.MethodGet, pathSSHKeys, nil, &cur); err != nil {
		return err
	}
	next := slices.Clone(cur.Keys)
	for _, k := range keys {
		k = strings.TrimSpace(k)
		if k != "" && !slices.ContainsFunc(next, func(c string) bool { return strings.TrimSpace(c) == k }) {
			next = append(next, k)
		}
	}
	if len(next) == len(cur.Keys) {
		return nil
	}
	return r.c.do(ctx, opPlace, http.MethodPut, pathSSHKeys, map[string][]string{"keys": next}, &cur)
}

func (r *Cloud) rollback(ctx context.Context, group string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := r.terminate(ctx, group); err != nil {
		return fmt.Errorf("runpod: roll back group %s: %w", group, err)
	}
	return nil
}

// pods lists the account's pods (one call; the list is not paginated) by group.
func (r *Cloud) pods(ctx context.Context, op string) (map[string][]Pod, error) {
	var out struct {
		Pods []Pod `json:"pods"`
	}
	if err := r.c.do(ctx, op, http.MethodGet, pathPods, nil, &out); err != nil {
		return nil, err
	}
	by := map[string][]Pod{}
	for _, p := range out.Pods {
		if g := p.Env[EnvGroup]; g != "" {
			by[g] = append(by[g], p)
		}
	}
	return by, nil
}

func index(p Pod) (int, bool) {
	v := p.Env[EnvIndex]
	if v == "" {
		if k := strings.LastIndexByte(p.Name, '-'); k >= 0 {
			v = p.Name[k+1:]
		}
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}

func alive(p Pod) bool { return p.Status != StatusTerminated }

// node maps a pod onto the neutral node. A RUNNING pod is only running
// for us once it has its direct SSH endpoint (RunPod reports RUNNING
// before the endpoint exists).
func node(p Pod, i int) providers.Node {
	n := providers.Node{ID: p.ID, Index: i, SSHUser: SSHUser}
	if d := p.SSH.Direct; d != nil {
		n.PublicHost, n.SSHPort = d.Host, d.Port
		if d.Username != "" {
			n.SSHUser = d.Username
		}
	}
	switch {
	case p.Cluster != nil && p.Cluster.IP != nil:
		n.PrivateIP = *p.Cluster.IP
	case p.GlobalNetworking.IP != nil:
		n.PrivateIP = *p.GlobalNetworking.IP
	}
	switch p.Status {
	case StatusProvisioning, StatusStarting:
		n.State = providers.NodePending
	case StatusRunning:
		n.State = providers.NodeRunning
		if p.SSH.Direct == nil {
			n.State, n.Message = providers.NodePending, "RunPod reports the pod running; its SSH endpoint is not published yet"
		}
	case StatusExited:
		n.State = providers.NodeStopped
	case StatusError:
		n.State, n.Message = providers.NodeFailed, "RunPod reports the pod in an unrecoverable error"
	case StatusTerminated:
		n.State = providers.NodeTerminated
	default:
		n.State, n.Message = providers.NodePending, "RunPod status "+p.Status
	}
	return n
}

// DescribeGroup reports the group's pods; ErrNotFound when RunPod knows none.
func (r *Cloud) DescribeGroup(ctx context.Context, groupName string) (providers.Group, error) {
	return providers.DescribeOne(ctx, Name, opDescribe, "pod", groupName, r.DescribeGroups)
}

// DescribeGroups reports many groups with one list call (R1).
func (r *Cloud) DescribeGroups(ctx context.Context, groupNames []string) (map[string]providers.Group, error) {
	by, err := r.pods(ctx, opDescribe)
	if err != nil {
		return nil, err
	}
	out := map[string]providers.Group{}
	for _, name := range groupNames {
		ps := by[name]
		if len(ps) == 0 {
			continue
		}
		g := providers.Group{Provider: Name, Name: name}
		seen := map[int]int{}
		for _, p := range ps {
			if g.Location == "" && p.DataCenterID != nil {
				g.Location = *p.DataCenterID
			}
			i, ok := index(p)
			if !ok {
				continue
			}
			n := node(p, i)
			if k, dup := seen[i]; dup {
				if g.Nodes[k].State == providers.NodeTerminated {
					g.Nodes[k] = n
				}
				continue
			}
			seen[i] = len(g.Nodes)
			g.Nodes = append(g.Nodes, n)
		}
		sort.Slice(g.Nodes, func(a, b int) bool { return g.Nodes[a].Index < g.Nodes[b].Index })
		out[name] = g
	}
	return out, nil
}

// pod reads one pod of the group; a pod RunPod no longer knows, or of
// another group, is ErrNotFound.
func (r *Cloud) pod(ctx context.Context, op, group, id string) (Pod, error) {
	var p Pod
	if err := r.c.do(ctx, op, http.MethodGet, pathPods+"/"+url.PathEscape(id), nil, &p); err != nil {
		return Pod{}, err
	}
	if p.Env[EnvGroup] != group || !alive(p) {
		return Pod{}, &providers.Error{Class: providers.ErrNotFound, Provider: Name, Op: op,
			Message: fmt.Sprintf("pod %s of group %s is gone", id, group)}
	}
	return p, nil
}

func (r *Cloud) action(ctx context.Context, op, id, action string) error {
	var p Pod
	return r.c.do(ctx, op, http.MethodPost, pathPods+"/"+url.PathEscape(id)+"/action", map[string]string{"action": action}, &p)
}

// RestartNode restarts a running pod and starts a stopped one, on the same
// host (a stopped pod keeps its machine assignment). A pod in ERROR is
// ErrUnrecoverable; one still starting is ErrTransient.
func (r *Cloud) RestartNode(ctx context.Context, groupName, nodeID string) error {
	p, err := r.pod(ctx, opRestart, groupName, nodeID)
	if err != nil {
		return err
	}
	switch p.Status {
	case StatusRunning:
		return r.action(ctx, opRestart, nodeID, "restart")
	case StatusExited:
		return r.action(ctx, opRestart, nodeID, "start")
	case StatusError:
		return &providers.Error{Class: providers.ErrUnrecoverable, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("pod %s is in an unrecoverable error", nodeID)}
	}
	return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: opRestart,
		Message: fmt.Sprintf("pod %s is %s; try again once it runs", nodeID, p.Status)}
}

// StopNode stops a running pod: its compute is released and billing for
// it ends; its volume and host assignment are kept. A pod that is not
// running is ErrValidation.
func (r *Cloud) StopNode(ctx context.Context, groupName, nodeID string) error {
	p, err := r.pod(ctx, opStop, groupName, nodeID)
	if err != nil {
		return err
	}
	if p.Status != StatusRunning {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opStop,
			Message: fmt.Sprintf("pod %s is %s, not running", nodeID, p.Status)}
	}
	return r.action(ctx, opStop, nodeID, "stop")
}

// PlaceNode is refused: a pod added to a placed group, or put in a gone
// one's place with its interconnect address (L10, X5), is not something
// RunPod's pods can promise. The refusal is ErrUnsupported and creates
// nothing; the join fails and the cluster stays as it was.
func (r *Cloud) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (providers.Node, error) {
	return providers.Node{}, &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: opPlaceNode, Code: "unsupported",
		Location: req.Location, Message: "RunPod cannot add a machine to a placed group or replace one in place; launch a new cluster instead"}
}

// ReleaseNode deletes one pod of the group; the others are untouched. A
// pod RunPod no longer knows, of another group or already gone, is success.
func (r *Cloud) ReleaseNode(ctx context.Context, groupName, nodeID string) error {
	defer r.lock(groupName)()
	by, err := r.pods(ctx, opReleaseNode)
	if err != nil {
		return err
	}
	for _, p := range by[groupName] {
		if p.ID != nodeID || !alive(p) {
			continue
		}
		err := r.c.do(ctx, opReleaseNode, http.MethodDelete, pathPods+"/"+url.PathEscape(p.ID), nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}

// TerminateGroup deletes every pod of the group. Pods already gone are success.
func (r *Cloud) TerminateGroup(ctx context.Context, groupName string) error {
	defer r.lock(groupName)()
	return r.terminate(ctx, groupName)
}

func (r *Cloud) terminate(ctx context.Context, groupName string) error {
	by, err := r.pods(ctx, opTerminate)
	if err != nil {
		return err
	}
	for _, p := range by[groupName] {
		if !alive(p) {
			continue
		}
		err := r.c.do(ctx, opTerminate, http.MethodDelete, pathPods+"/"+url.PathEscape(p.ID), nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}
