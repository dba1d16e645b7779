package jobs_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	sshprov "github.com/clusterdeck/clusterdeck/providers/ssh"
	"github.com/clusterdeck/clusterdeck/web"
)

// leftDaemon matches a line of `ps -eo comm,stat` naming a process the
// cluster started: after terminate there must be none.
var leftDaemon = regexp.MustCompile(`(?m)^(clusterdeck|slurmctld|slurmd|slurmstepd|munged) `)

// needNamespaces skips (loudly) outside CI when this machine cannot run the
// SSH machines test; under CI=true it fails (.ci/run installs what it needs).
func needNamespaces(t *testing.T, bins ...string) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, bin := range append([]string{"ip", "unshare", "ssh-keygen", "/usr/sbin/sshd", "go"}, bins...) {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the SSH machines test needs %s (installed by .ci/run)", strings.Join(missing, ", "))
	}
	t.Skipf("SKIPPED: the SSH machines test needs %s; CI runs it", strings.Join(missing, ", "))
}

func must(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// testNet is a bridge the test creates (hostIP on it) and one network
// namespace per machine on it, each running Debian's sshd on its address
// in its own mount, UTS and PID namespaces, chrooted into an overlay of the
// host's root whose writes stay in the namespace; /run is its own, and so
// is the host name. Everything is removed in t.Cleanup, also on failure.
type testNet struct {
	hostKeys []string // each machine's host key, authorized_keys form
	hostIP   string
	machines []sshprov.Machine
	key      string // the private key file the provider logs in with
	dirs     []string
}

// removeStaleNet removes what a run of this test that was killed before
// its cleanups left on subnet — its bridge, its namespaces and the sshd
// and daemons still running in them — which would answer on the test's
// addresses with other host keys.
func removeStaleNet(subnet string) {
	addrs, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	for _, line := range strings.Split(string(addrs), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[1], "cdbr") || f[3] != subnet+".1/24" {
			continue
		}
		id := strings.TrimPrefix(f[1], "cdbr")
		list, _ := exec.Command("ip", "netns", "list").Output()
		for _, l := range strings.Split(string(list), "\n") {
			if ns := strings.Fields(l); len(ns) > 0 && strings.HasPrefix(ns[0], "cdns"+id) {
				pids, _ := exec.Command("ip", "netns", "pids", ns[0]).Output()
				for _, pid := range strings.Fields(string(pids)) {
					_ = exec.Command("kill", "-9", pid).Run()
				}
				_ = exec.Command("ip", "netns", "del", ns[0]).Run()
			}
		}
		_ = exec.Command("ip", "link", "del", f[1]).Run()
	}
}

func newTestNet(t *testing.T, subnet string, n int) *testNet {
	t.Helper()
	tag := make([]byte, 3)
	_, _ = rand.Read(tag)
	id := hex.EncodeToString(tag)
	guardHost(t)
	dir := t.TempDir()
	nfs := filepath.Join(dir, "nfs") // what the stand-in NFS servers publish, seen by every machine
	if err := os.MkdirAll(nfs, 0o755); err != nil {
		t.Fatal(err)
	}
	tn := &testNet{hostIP: subnet + ".1", key: filepath.Join(dir, "id_ed25519")}

	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tn.key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, _ := gossh.NewPublicKey(pub)

	removeStaleNet(subnet)
	br := "cdbr" + id
	must(t, "ip", "link", "add", br, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", br).Run() })
	must(t, "ip", "addr", "add", tn.hostIP+"/24", "dev", br)
	must(t, "ip", "link", "set", br, "up")
	for i := range n {
		ns, addr := fmt.Sprintf("cdns%s%d", id, i), fmt.Sprintf("%s.%d", subnet, i+2)
		host, peer := fmt.Sprintf("cdh%s%d", id, i), fmt.Sprintf("cdp%s%d", id, i)
		must(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		must(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
		must(t, "ip", "link", "set", peer, "netns", ns)
		must(t, "ip", "link", "set", host, "master", br)
		must(t, "ip", "link", "set", host, "up")
		must(t, "ip", "netns", "exec", ns, "ip", "addr", "add", addr+"/24", "dev", peer)
		must(t, "ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")
		must(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

		m := filepath.Join(dir, fmt.Sprintf("m%d", i))
		conf, ov := filepath.Join(m, "conf"), filepath.Join(m, "ov")
		for _, d := range []string{conf, ov} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		must(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(conf, "host_key"))
		if err := os.WriteFile(filepath.Join(conf, "authorized_keys"), gossh.MarshalAuthorizedKey(sshPub), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := strings.Join([]string{
			"ListenAddress " + addr + ":22",
			"HostKey " + filepath.Join(conf, "host_key"),
			"AuthorizedKeysFile " + filepath.Join(conf, "authorized_keys"),
			"PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
			"UsePAM no", "StrictModes no", "PidFile /run/sshd.pid", "LogLevel ERROR", "",
		}, "\n")
		if err := os.WriteFile(filepath.Join(conf, "sshd_config"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		// The machine's root is an overlay of the host's whose writes stay
		// in the namespace's tmpfs: the agent's steps (the mounts' /shared,
		// /etc/fstab and /etc/exports, installs, the cluster's files) change
		// nothing on the host. The test's directory is bound in at its
		// path (sshd's configuration and keys).
		root := ov + "/root"
		boot := strings.Join([]string{
			"set -e",
			"mount --make-rprivate /",
			"mount -t tmpfs tmpfs " + ov,
			"mkdir -p " + ov + "/up " + ov + "/work " + root + " " + ov + "/dev/up " + ov + "/dev/work",
			"mount -t overlay overlay -o lowerdir=/,upperdir=" + ov + "/up,workdir=" + ov + "/work " + root,
			"mount --rbind /proc " + root + "/proc",
			"mount --rbind /sys " + root + "/sys",
			"mount -t overlay overlay -o lowerdir=/dev,upperdir=" + ov + "/dev/up,workdir=" + ov + "/dev/work " + root + "/dev",
			"mount -t tmpfs tmpfs " + root + "/run",
			"mkdir -p " + root + "/run/sshd " + root + dir,
			"mount --bind " + dir + " " + root + dir,
			// The machine's one GPU: these namespaces have none, so
			// nvidia-smi answers for an L40S and /dev/nvidia0 exists (a
			// null device), the way the driver presents them.
			"mkdir -p " + root + "/usr/local/bin",
			"cat > " + root + "/usr/local/bin/nvidia-smi <<'EOF'\n" + fakeNvidiaSMI + "EOF",
			"chmod 755 " + root + "/usr/local/bin/nvidia-smi",
			"mknod -m 666 " + root + "/dev/nvidia0 c 1 3",
			// NFS: this kernel has neither an NFS server nor an NFS
			// client, so the programs the mounts step calls are stand-ins
			// at the paths Debian's nfs-kernel-server and nfs-common put
			// them, with the package's /etc/exports (see standInExportfs): the real
			// step runs unchanged.
			"mkdir -p " + root + "/etc/init.d",
			"cat > " + root + "/usr/sbin/exportfs <<'EOF'\n" + fmt.Sprintf(standInExportfs, nfs) + "EOF",
			"cat > " + root + "/usr/sbin/mount.nfs <<'EOF'\n" + fmt.Sprintf(standInMountNFS, nfs) + "EOF",
			"cat > " + root + "/etc/init.d/nfs-kernel-server <<'EOF'\n" + standInNFSServer + "EOF",
			"test -e " + root + "/etc/exports || printf '# /etc/exports: the access control list for filesystems which may be exported\\n#\\t\\tto NFS clients.  See exports(5).\\n' > " + root + "/etc/exports",
			"chmod 755 " + root + "/usr/sbin/exportfs " + root + "/usr/sbin/mount.nfs " + root + "/etc/init.d/nfs-kernel-server",
			fmt.Sprintf("hostname machine-%d", i),
			"exec chroot " + root + " /usr/sbin/sshd -D -e -f " + filepath.Join(conf, "sshd_config"),
		}, "\n")
		cmd := exec.Command("ip", "netns", "exec", ns, "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", "-c", boot)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		hostKey := strings.TrimSpace(string(mustRead(t, filepath.Join(conf, "host_key.pub"))))
		tn.hostKeys = append(tn.hostKeys, hostKey)
		if i == 1 {
			hostKey = "" // trust on first use, recorded
		}
		tn.machines = append(tn.machines, sshprov.Machine{Name: fmt.Sprintf("box-%d", i), Host: addr, User: "root",
			KeyPath: tn.key, HostKey: hostKey, GPUs: 1, Accelerator: "L40S", VCPUs: 2, MemoryGB: 1,
			RootDiskGB: 10, Location: "lab", LocationName: "Test lab", Kind: "bare_metal", PricePerHour: "1.25"})
		// sshd answers before the test goes on (bounded).
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", addr+":22", time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sshd on %s never answered: %v", addr, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return tn
}

// fakeNvidiaSMI answers the agent's GPU query and `nvidia-smi -L` for the
// one L40S each namespace machine is sold with.
const fakeNvidiaSMI = `#!/bin/sh
if [ "${1:-}" = -L ]; then
  echo "GPU 0: NVIDIA L40S (UUID: GPU-00000000-0000-0000-0000-000000000000)"
else
  echo "index, name, memory.total [MiB], driver_version"
  echo "0, NVIDIA L40S, 46068 MiB, 550.54.15"
fi
`

// The stand-ins for NFS. The kernel these tests run on has
// no NFS (no nfsd, no nfs filesystem), so the protocol is what differs
// from a real machine; everything around it is the product's own mounts
// step (V4), unchanged: node-0 writes /etc/exports with the other nodes'
// addresses, starts the server (`service nfs-kernel-server start`, no
// systemd here) and runs `exportfs -rav`, then writes the hostfile into
// /shared; each other node adds node-0's /shared to /etc/fstab as nfs and
// runs `mount /shared`, which calls mount.nfs. The stand-in exportfs
// publishes each exported directory under a directory every machine sees
// (<test dir>/nfs/<address>/<path>, node-0's /shared becoming a bind of it) with
// the clients /etc/exports allows; the stand-in mount.nfs refuses a
// client that is not listed ("access denied by server", as NFS does) and
// otherwise binds the published directory at the mount point, so what a
// node writes into /shared is what node-0 reads there.
const standInExportfs = `#!/bin/sh
# Stand-in for exportfs (this kernel has no NFS server): publishes what
# /etc/exports lists under %[1]s for the stand-in mount.nfs.
set -eu
me=$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
grep -v '^[[:space:]]*#' /etc/exports | while read -r path clients; do
  [ -n "$path" ] || continue
  pub=%[1]s/$me$path
  mkdir -p "$pub"
  if ! mountpoint -q "$path"; then
    cp -a "$path"/. "$pub"/
    mount --bind "$pub" "$path"
  fi
  echo "$clients" | tr ' ' '\n' | sed 's/(.*//' > "$pub.clients"
  for c in $(cat "$pub.clients"); do echo "exporting $c:$path"; done
done
`

const standInMountNFS = `#!/bin/sh
# Stand-in for mount.nfs (this kernel has no NFS client): mounts what the
# server's stand-in exportfs published, for the clients it allows.
set -eu
spec=$1 dir=$2
host=${spec%%%%:*} path=${spec#*:}
pub=%[1]s/$host$path
me=$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
if [ ! -f "$pub.clients" ] || ! grep -qx "$me" "$pub.clients"; then
  echo "mount.nfs: access denied by server while mounting $spec" >&2
  exit 32
fi
exec mount --bind "$pub" "$dir"
`

const standInNFSServer = `#!/bin/sh
# Stand-in for nfs-kernel-server's init script: the stand-in exportfs serves.
exit 0
`

func (tn *testNet) hostKeyOf(t *testing.T, i int) string {
	t.Helper()
	return tn.hostKeys[i]
}

// guardHost records the host's /etc/fstab, /etc/exports and /shared now
// and, when the test ends (its machines removed), requires them as they
// were: the agents' mounts steps (V4) ran on the machines, not here.
func guardHost(t *testing.T) {
	t.Helper()
	read := func(path string) string {
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
			return "absent"
		case fi.IsDir():
			return "a directory"
		}
		b, _ := os.ReadFile(path)
		return "file " + hex.EncodeToString(b)
	}
	paths := []string{"/etc/fstab", "/etc/exports", "/shared"}
	before := map[string]string{}
	for _, p := range paths {
		before[p] = read(p)
	}
	t.Cleanup(func() {
		for _, p := range paths {
			if now := read(p); now != before[p] {
				t.Errorf("the host's %s changed while the machines ran", p)
			}
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildAgent builds this module's clusterdeck binary: the real agent.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "clusterdeck")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sshWorld is the real thing with the ssh provider: the real web server
// listening on the bridge, the real jobs, machines reached over real SSH
// running the real agent binary.
type sshWorld struct {
	*world
	prov *sshprov.Provider
	tn   *testNet
}

func newSSHWorld(t *testing.T, db *gorm.DB, tn *testNet, agentBin string) *sshWorld {
	t.Helper()
	ctx := context.Background()
	// The agents run on wall time; the server's clock starts at now.
	clock := models.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	store := models.NewStore(db, clock)
	ln, err := net.Listen("tcp", tn.hostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(web.New(web.Deps{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: web.Config{SessionAuthKey: make([]byte, 64), SessionEncKey: make([]byte, 32)}}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	prov, err := sshprov.New(sshprov.Config{Machines: append([]sshprov.Machine(nil), tn.machines...),
		StatePath: filepath.Join(t.TempDir(), "state.json"), AgentBinary: agentBin, DialTimeout: 5 * time.Second,
		AgentEvery: time.Second}) // the agents check in each second, not every 10 s: the test waits on them
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.Registry{sshprov.Name: prov}
	w := &world{t: t, store: store, clock: clock, srv: srv, cat: &jobs.Catalog{Store: store, Providers: reg},
		job: &jobs.Provision{Store: store, Providers: reg, ServerURL: srv.URL}, term: &jobs.Terminate{Store: store, Providers: reg}, install: &jobs.Install{Store: store},
		billing: &jobs.Billing{Store: store}, stop: &jobs.Stop{Store: store, Providers: reg},
		join: &jobs.Join{Store: store, Providers: reg, ServerURL: srv.URL}, verify: &jobs.Verify{Store: store}}
	if err := w.cat.Run(ctx); err != nil {
		t.Fatal(err)
	}
	w.org = models.Org{ID: models.NewID("org"), Name: "Acme", MaxMachines: 64, MaxGPUs: 512, CreatedAt: clock.Now()}
	w.env = models.Environment{ID: models.NewID("env"), OrgID: w.org.ID, Name: "default", IsDefault: true, CreatedAt: clock.Now()}
	if err := db.Create(&w.org).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&w.env).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deposit(ctx, w.org.ID, 1000*models.Micro, "test-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	return &sshWorld{world: w, prov: prov, tn: tn}
}

// until runs the jobs while the real agents work on wall time, keeping
// the server's clock with the wall, until the cluster reaches status or
// max (wall time) passes.
func (w *sshWorld) until(id string, status models.ClusterStatus, max time.Duration) models.Cluster {
	w.t.Helper()
	for end := time.Now().Add(max); time.Now().Before(end); {
		if d := time.Until(w.clock.Now()); d < 0 {
			w.clock.Advance(-d)
		}
		w.runJobs()
		if err := w.cat.Run(context.Background()); err != nil {
			w.t.Fatalf("catalog: %v", err)
		}
		if c := w.cluster(id); c.Status == status {
			return c
		}
		time.Sleep(300 * time.Millisecond)
	}
	return w.cluster(id)
}

// onMachine runs a shell command on machine i over real SSH (the test's
// own client, verifying nothing but reaching the namespace).
func (w *sshWorld) onMachine(i int, script string) (string, error) {
	m := w.tn.machines[i]
	key, _ := os.ReadFile(m.KeyPath)
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		return "", err
	}
	c, err := gossh.Dial("tcp", m.Host+":22", &gossh.ClientConfig{User: "root", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second})
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(script)
	return string(out), err
}

func (w *sshWorld) stockOf() int {
	w.t.Helper()
	offers, err := w.prov.ListOffers(context.Background())
	if err != nil || len(offers) != 1 {
		w.t.Fatalf("offers: %v %v", offers, err)
	}
	return *offers[0].NodesAvailable
}

// A 2-machine cluster on the operator's own machines goes launch → agent
// check-in → mesh → ready → terminate through the real provisioning job,
// the real agent binary and real SSH (OP1); terminate stops the agents and
// removes the cluster's files, and the machines are for sale again. With
// Slurm, the real install script installs Debian's real Slurm on both
// machines (each its own /etc, /var, /run and host name) and the ready
// check's job runs on both (S2).
func TestSSHMachinesCluster(t *testing.T) {
	// In parallel: it mostly waits on real machines' agents (a check-in a
	// second), while the package's other tests want the CPU.
	t.Parallel()
	needNamespaces(t, "slurmctld", "slurmd", "munged")
	tn := newTestNet(t, "10.201.0", 2)
	agentBin := buildAgent(t)
	for _, software := range []string{"none", "slurm"} {
		t.Run(software, func(t *testing.T) {
			modelstest.EachInTurn(t, func(t *testing.T, db *gorm.DB) { sshCluster(t, newSSHWorld(t, db, tn, agentBin), software) })
		})
	}
	t.Run("rollback", func(t *testing.T) { sshRollback(t, tn, agentBin) })
}

// All or nothing: when one machine cannot be placed (its host key is not
// the one the file names), the machine already prepared is cleaned, both
// are for sale again and the error says why; trust on first use is
// recorded and enforced.
func sshRollback(t *testing.T, tn *testNet, agentBin string) {
	ctx := context.Background()
	ms := append([]sshprov.Machine(nil), tn.machines...)
	ms[1].HostKey = ms[0].HostKey // machine 1 presents another key
	state := filepath.Join(t.TempDir(), "state.json")
	prov, err := sshprov.New(sshprov.Config{Machines: ms, StatePath: state, AgentBinary: agentBin, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	offers, _ := prov.ListOffers(ctx)
	req := providers.PlaceRequest{GroupName: "cl_rollback", OfferID: offers[0].OfferID, Location: "lab", Count: 2,
		Agent: providers.AgentBootstrap{ServerURL: "http://" + tn.hostIP + ":1", Tokens: []string{"secret-token-0", "secret-token-1"}}}
	_, err = prov.PlaceGroup(ctx, req)
	if !errors.Is(err, providers.ErrValidation) || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("placement with a wrong host key: %v", err)
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Errorf("the error shows an agent token: %v", err)
	}
	offers, _ = prov.ListOffers(ctx)
	if *offers[0].NodesAvailable != 2 {
		t.Errorf("stock after the rollback: %d, want 2", *offers[0].NodesAvailable)
	}
	w := &sshWorld{tn: tn}
	if out, err := w.onMachine(0, "ls "+sshprov.RemoteDir+"/cl_rollback 2>&1; true"); err != nil || !strings.Contains(out, "No such file") {
		t.Errorf("machine 0 keeps the failed placement's files: %v %s", err, out)
	}
	if _, err := prov.DescribeGroup(ctx, "cl_rollback"); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("describe of the rolled back group: %v, want not found", err)
	}

	// Trust on first use: machine 1 without a host key is trusted and its
	// key recorded; a later different key is refused.
	ms = append([]sshprov.Machine(nil), tn.machines...)
	prov, err = sshprov.New(sshprov.Config{Machines: ms[1:], StatePath: state, AgentBinary: agentBin, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req.GroupName, req.Count, req.Agent.Tokens = "cl_tofu", 1, []string{"t"}
	offers, _ = prov.ListOffers(ctx)
	req.OfferID = offers[0].OfferID
	if _, err := prov.PlaceGroup(ctx, req); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := prov.TerminateGroup(ctx, "cl_tofu"); err != nil {
		t.Fatal(err)
	}
	recorded := string(mustRead(t, state))
	if !strings.Contains(recorded, strings.Fields(ms[0].HostKey)[0]) {
		t.Fatalf("state does not record machine 1's key: %s", recorded)
	}
	bad := strings.Replace(recorded, strings.Fields(tn.hostKeyOf(t, 1))[1], strings.Fields(ms[0].HostKey)[1], 1)
	if err := os.WriteFile(state, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	prov, _ = sshprov.New(sshprov.Config{Machines: ms[1:], StatePath: state, AgentBinary: agentBin, DialTimeout: 5 * time.Second})
	req.GroupName = "cl_tofu2"
	if _, err := prov.PlaceGroup(ctx, req); !errors.Is(err, providers.ErrValidation) {
		t.Fatalf("a changed host key after first use: %v, want refused", err)
	}
}

func sshCluster(t *testing.T, w *sshWorld, software string) {
	if got := w.stockOf(); got != 2 {
		t.Fatalf("stock %d, want 2", got)
	}
	c := w.launchWith("L40S", 2, 1, software)
	c = w.until(c.ID, models.StatusReady, 150*time.Second)
	if c.Status != models.StatusReady {
		out0, _ := w.onMachine(0, "tail -n 30 "+sshprov.RemoteDir+"/*/agent.log /var/log/slurm/*.log; ps -eo pid,args")
		t.Fatalf("status %s, want ready\n%s\nmachine 0:\n%s", c.Status, w.events(c.ID), out0)
	}
	ev := w.events(c.ID)
	for _, want := range []string{"node-0's agent checked in", "node-1's agent checked in", "node-0 reached its peer", "node-1 reached its peer"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events lack %q:\n%s", want, ev)
		}
	}
	if software == "slurm" {
		// The job ran on both machines, each with its GPU, under the
		// Slurm node names (slurmd -N) the generated files give them.
		check := w.lastCheck(c.ID, 1).Output
		for _, want := range []string{"node-0 node-0 gpus=1", "node-1 node-1 gpus=1", "node-0 idle gpu:1", "node-1 idle gpu:1"} {
			if !strings.Contains(check, want) {
				t.Errorf("check output lacks %q:\n%s", want, check)
			}
		}
	}
	if software == "slurm" {
		customerJob(t, w, c)
	}
	if got := w.stockOf(); got != 0 {
		t.Errorf("stock while the cluster runs: %d, want 0", got)
	}
	// Each machine runs one agent, from the cluster's directory, checking
	// in as often as the provider was told. A process the agent is starting
	// shows the agent's command line until it execs, so processes whose
	// parent matches too are not counted.
	for i := range 2 {
		out, err := w.onMachine(i, "ps -eo pid=,ppid=,args= | awk -v re='^"+sshprov.RemoteDir+"/"+c.ID+"/clusterdeck agent --server .* --every 1s$' "+
			"'{ pid = $1; ppid = $2; $1 = \"\"; $2 = \"\"; sub(/^ +/, \"\"); if ($0 ~ re) { m[pid] = ppid } } "+
			"END { n = 0; for (k in m) if (!(m[k] in m)) n++; print n }'")
		if err != nil || out != "1\n" {
			t.Errorf("machine %d: %v\n%s", i, err, out)
		}
	}
	if _, err := w.store.RequestTerminate(context.Background(), w.org.ID, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	c = w.until(c.ID, models.StatusTerminated, 30*time.Second)
	if c.Status != models.StatusTerminated {
		t.Fatalf("status %s, want terminated\n%s", c.Status, w.events(c.ID))
	}
	// Nothing of the cluster is left: no agent, no daemon it started, no file.
	for i := range 2 {
		out, err := w.onMachine(i, "ls "+sshprov.RemoteDir+"/"+c.ID+" /etc/clusterdeck /etc/slurm/slurm.conf 2>&1; "+
			"ps -eo comm,stat | grep -E '^(clusterdeck|slurmctld|slurmd|slurmstepd|munged) ' ; echo left")
		if err != nil || strings.Count(out, "No such file") != 3 || !strings.HasSuffix(out, "\nleft\n") || leftDaemon.MatchString(out) {
			t.Errorf("machine %d after terminate: %v\n%s", i, err, out)
		}
	}
	if got := w.stockOf(); got != 2 {
		t.Errorf("stock after terminate: %d, want 2", got)
	}
}

// helloJob is a customer's batch script: one task on each of the two
// machines, each writing into /shared, the job's output there too.
const helloJob = `#!/bin/bash
#SBATCH --job-name=hello
#SBATCH --nodes=2
#SBATCH --output=/shared/hello-%j.out
srun -N2 --ntasks-per-node=1 bash -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME ($(hostname))" > /shared/hello-$SLURMD_NODENAME.txt && echo "$SLURMD_NODENAME wrote"'
`

// customerJob is what a customer does with a ready Slurm cluster (S2,
// V4): once both nodes mounted /shared (node-0's, over the NFS
// stand-ins), an sbatch script on node-0 runs `srun -N2` across both
// machines, each task writing into /shared; node-0 reads both files and
// the job's output back from /shared, and the queue is empty afterwards.
func customerJob(t *testing.T, w *sshWorld, c models.Cluster) {
	t.Helper()
	ctx := context.Background()
	var mounts []models.NodeMount
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if d := time.Until(w.clock.Now()); d < 0 {
			w.clock.Advance(-d)
		}
		var err error
		if mounts, err = w.store.NodeMounts(ctx, w.org.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		if len(mounts) == 2 && mounts[0].Ended() && mounts[1].Ended() {
			break
		}
	}
	if len(mounts) != 2 || mounts[0].State != models.MountsMounted || mounts[1].State != models.MountsMounted {
		t.Fatalf("both nodes mount /shared: %+v\n%s", mounts, w.events(c.ID))
	}
	nodes, err := w.store.NodesFor(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	head := -1
	for i, m := range w.tn.machines {
		for _, n := range nodes {
			if n.Rank == 0 && n.PrivateIP == m.Host {
				head = i
			}
		}
	}
	if head < 0 {
		t.Fatalf("no machine is node-0: %+v", nodes)
	}
	out, err := w.onMachine(head, "cat > /shared/hello.sbatch <<'EOF'\n"+helloJob+"EOF\n"+
		"cd /shared && timeout 90 sbatch --wait hello.sbatch")
	if err != nil || !strings.Contains(out, "Submitted batch job ") {
		all, _ := w.onMachine(head, "cat /shared/hello-*.out; tail -n 20 /var/log/slurm/*.log")
		t.Fatalf("sbatch --wait on node-0: %v\n%s\n%s", err, out, all)
	}
	job := strings.TrimSpace(out[strings.LastIndex(out, "Submitted batch job ")+len("Submitted batch job "):])
	out, err = w.onMachine(head, "cat /shared/hello-node-0.txt /shared/hello-node-1.txt /shared/hello-"+job+".out")
	for _, want := range []string{" of 2 on node-0 (", " of 2 on node-1 (", "node-0 wrote\n", "node-1 wrote\n"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("node-0's /shared lacks %q: %v\n%s", want, err, out)
		}
	}
	if out, err := w.onMachine(head, "squeue -h"); err != nil || out != "" {
		t.Errorf("squeue after the job: %v\n%s", err, out)
	}
}
