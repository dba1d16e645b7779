package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"golang.org/x/crypto/ssh"
)

// seedCommand is one example command of a seed document, as the document
// writes it, with <placeholders> where the document's own id went.
type seedCommand struct {
	doc     string
	command string
	pending string // why it may not run yet: a command answering "not available yet" is counted pending
}

// seedCommands are every example command of both seed documents (API3):
// AI Reserve's "Multi-node clusters" and Runcrate's "Clusters" (whose only
// CLI example is its --include-community flag on offers). They run in the
// document's order but for terminate, which runs last so that one cluster
// goes through every command.
var seedCommands = []seedCommand{
	{doc: "AI Reserve", command: "aireserve gpu clusters quote --accelerator H200_141GB --nodes 2 --gpus-per-node 8 --persistent-gb 1000 --max-hourly-price 100"},
	{doc: "AI Reserve", command: "aireserve gpu clusters launch --quote-id <quote> --env-file ./train.env --ssh-key-id <ssh-key> --wait"},
	{doc: "AI Reserve", command: "aireserve gpu clusters connections <cluster>"},
	{doc: "AI Reserve", command: "aireserve gpu clusters logs <cluster> --node 1"},
	{doc: "AI Reserve", command: "aireserve gpu clusters recovery <cluster> --mode restart --max-attempts 3 --cooldown-minutes 5",
		pending: "the server has no recovery API yet (PUT /v1/gpu/clusters/{id}/recovery comes with health and recovery, R1)"},
	{doc: "AI Reserve", command: "aireserve gpu clusters recover <cluster> --wait",
		pending: "the server has no recovery API yet (POST /v1/gpu/clusters/{id}/recover comes with health and recovery, R1)"},
	{doc: "AI Reserve", command: "aireserve gpu clusters terminate <cluster> --wait"},
	{doc: "Runcrate", command: "clusterdeck gpu offers --accelerator H100_80GB --nodes 2 --include-community"},
}

// args is the command for `clusterdeck gpu`, its placeholders filled.
func (s seedCommand) args(t *testing.T, ids map[string]string) []string {
	t.Helper()
	fields := strings.Fields(s.command)[2:] // the program and "gpu"
	for i, f := range fields {
		if strings.HasPrefix(f, "<") {
			id, ok := ids[strings.Trim(f, "<>")]
			if !ok {
				t.Fatalf("%s: no id for %s yet", s.command, f)
			}
			fields[i] = id
		}
	}
	return fields
}

// API3: every example command of both seed documents, ids filled in, runs
// against a Clusterdeck and does what its document says. A command for
// what is not built yet may answer "not available yet" if it has a pending
// reason, and is counted pending; the day it runs, it is checked for real.
func TestSeedDocumentCommands(t *testing.T) {
	eachDeckInTurn(t, func(t *testing.T, d *deck) { // t.Chdir: one working directory per process
		ctx := context.Background()
		h200 := cliOffer("h200x8", "us-east", 8, 3_500_000, ip(12))
		h200.Accelerator = "H200_141GB"
		community := cliOffer("c4090", "home-lab", 8, 400_000, ip(6))
		community.Community = true
		if err := d.store.ReplaceOffers(ctx, "sim", []models.Offer{cliOffer("h100x8", "us-east", 8, 2_490_000, ip(20)), h200, community}, d.clock.Now()); err != nil {
			t.Fatal(err)
		}
		key, err := d.store.AddSSHKey(ctx, d.org.ID, d.user.ID, "laptop", sshPublicKey(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(t.TempDir())
		if err := os.WriteFile("train.env", []byte("HF_TOKEN=hf_seed\nexport MALLOC_ARENA_MAX=1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{"ssh-key": key.ID}
		var logs struct {
			out, errOut *watchBuffer
			done        chan int
		}
		ran, pending := 0, 0
		for _, s := range seedCommands {
			args := s.args(t, ids)
			if s.pending != "" {
				if _, errOut, code := d.gpu(t, "clusters", args[1], "--help"); code == exitUsage && strings.Contains(errOut, "not available yet") {
					t.Logf("pending (%s): %s", s.pending, s.command)
					pending++
					continue
				}
			}
			ran++
			switch sub := args[0] + " " + args[1]; sub {
			case "clusters quote":
				// "The quote prices the whole cluster: every node's GPUs, every root disk, and the shared volume."
				out, errOut, code := d.gpu(t, args...)
				if code != 0 {
					t.Fatalf("%s: exit %d %s", s.command, code, errOut)
				}
				mustContain(t, s.command, out, "2 × 8 GPUs H200_141GB", "Ceiling", "$100.00/h", "1000 GB", "gpus", "root_disks", "volume")
				ids["quote"] = regexp.MustCompile(`qt_\w+`).FindString(out)
			case "clusters launch":
				out, errOut, done := d.background(ctx, append(args, "--poll-interval", "2ms")...)
				id := out.waitFor(t, launchedRE, done)[1]
				d.join(t, id, 2)
				if code := waitExit(t, done, out, errOut); code != 0 {
					t.Fatalf("%s: exit %d\n%s\n%s", s.command, code, out, errOut)
				}
				mustContain(t, s.command, out.String(), "Cluster "+id+" is ready")
				cl, err := d.store.ClusterForOrg(ctx, d.org.ID, id)
				if err != nil {
					t.Fatal(err)
				}
				if cl.QuoteID != ids["quote"] || cl.Env()["HF_TOKEN"] != "hf_seed" || cl.Env()["MALLOC_ARENA_MAX"] != "1" ||
					len(cl.SSHKeys()) != 1 || cl.SSHKeys()[0] != key.PublicKey {
					t.Errorf("%s: quote %s env %v keys %v", s.command, cl.QuoteID, cl.Env(), cl.SSHKeys())
				}
				ids["cluster"] = id
			case "clusters connections":
				// "the primary node's SSH, every node's SSH and its address on the interconnect"
				out, errOut, code := d.gpu(t, args...)
				if code != 0 {
					t.Fatalf("%s: exit %d %s", s.command, code, errOut)
				}
				mustContain(t, s.command, out, "ssh ", "10.77.0.1", "10.77.0.2", "n0.example.net", "n1.example.net")
			case "clusters logs":
				// "Logs stream per node": node 1's, followed until the cluster ends.
				cl, _ := d.store.ClusterForOrg(ctx, d.org.ID, ids["cluster"])
				d.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: d.clock.Now(), Text: "rank zero line"}})
				d.store.AppendNodeLogs(ctx, cl, 1, []models.LogInput{{At: d.clock.Now(), Text: "rank one line"}})
				logs.out, logs.errOut, logs.done = d.background(ctx, args...)
				logs.out.waitFor(t, regexp.MustCompile(`rank one line`), logs.done)
				if strings.Contains(logs.out.String(), "rank zero") {
					t.Errorf("%s shows node 0's log:\n%s", s.command, logs.out)
				}
			case "clusters recovery":
				// "Opt into automatic recovery per cluster."
				out, errOut, code := d.gpu(t, args...)
				if code != 0 || !strings.Contains(out, "restart, 3 attempts per episode, 5 minutes apart") {
					t.Fatalf("%s: exit %d\n%s\n%s", s.command, code, out, errOut)
				}
			case "clusters recover":
				// "Make one attempt now": on a degraded cluster; --wait follows it until the cluster is back.
				if err := d.store.DB().Model(&models.Cluster{}).Where("id = ?", ids["cluster"]).Updates(map[string]any{
					"status": models.StatusDegraded, "episode_started_at": d.clock.Now(), "degraded_from": "ready",
					"last_error": "node_down:node-1: stopped"}).Error; err != nil {
					t.Fatal(err)
				}
				out, errOut, done := d.background(ctx, append(args, "--poll-interval", "2ms")...)
				out.waitFor(t, regexp.MustCompile(`Recover now accepted for `+ids["cluster"]), done)
				if err := d.store.DB().Model(&models.Cluster{}).Where("id = ?", ids["cluster"]).Updates(map[string]any{
					"status": models.StatusReady, "last_error": ""}).Error; err != nil { // what the recovery job does once node-1 is back
					t.Fatal(err)
				}
				if code := waitExit(t, done, out, errOut); code != 0 {
					t.Fatalf("%s: exit %d\n%s\n%s", s.command, code, out, errOut)
				}
			case "clusters terminate":
				out, errOut, done := d.background(ctx, append(args, "--poll-interval", "2ms")...)
				out.waitFor(t, regexp.MustCompile(`Terminate accepted for `+ids["cluster"]), done)
				if _, err := d.store.MarkTerminated(ctx, ids["cluster"]); err != nil {
					t.Fatal(err)
				}
				if code := waitExit(t, done, out, errOut); code != 0 {
					t.Fatalf("%s: exit %d %s", s.command, code, errOut)
				}
				mustContain(t, s.command, out.String(), "is terminated")
				if code := waitExit(t, logs.done, logs.out, logs.errOut); code != 0 {
					t.Errorf("the followed log did not end with the cluster: exit %d", code)
				}
			case "offers --accelerator":
				// "Include community hosts … --include-community in the CLI"
				out, errOut, code := d.gpu(t, args...)
				if code != 0 {
					t.Fatalf("%s: exit %d %s", s.command, code, errOut)
				}
				mustContain(t, s.command, out, "home-lab", "vm (community)", "us-east")
			default:
				t.Fatalf("no check for %q", s.command)
			}
		}
		t.Logf("seed commands: %d run, %d pending", ran, pending)
		if ran+pending != len(seedCommands) || pending > 2 {
			t.Errorf("%d run, %d pending", ran, pending)
		}
	})
}

// sshPublicKey is a fresh ed25519 public key in authorized_keys form.
func sshPublicKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " seed@laptop"
}
