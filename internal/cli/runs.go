package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// maxRunFile bounds a run file (X19: the API refuses larger commands and env anyway).
const maxRunFile = 256 << 10

// runs dispatches `gpu runs SUB …` (X17).
func (c *gpuCLI) runs(args []string) error {
	if len(args) == 0 {
		return usageError("name a runs command: submit, list, get or logs")
	}
	commands := map[string]func([]string) error{
		"submit": c.submitRun, "list": c.listRuns, "ls": c.listRuns, "get": c.getRun, "show": c.getRun, "logs": c.runLogs,
	}
	if run, ok := commands[args[0]]; ok {
		return run(args[1:])
	}
	return usageError(fmt.Sprintf("unknown command \"runs %s\"", args[0]))
}

// RunFile is train.yaml: the run's fields under the API's names (api.RunBody).
type RunFile = api.RunBody

// submitRun is `gpu runs submit -f train.yaml` (and `clusterdeck run -f
// train.yaml`): the file's run is submitted with an idempotency key, so a
// retried submission is the same run.
func (c *gpuCLI) submitRun(args []string) error {
	fs := c.flagSet("submit", "runs submit -f train.yaml [--idempotency-key K]")
	file := fs.String("f", "", "the run file (YAML or JSON with the API's field names)")
	key := fs.String("idempotency-key", "", "the same key submits the same run once; a fresh one by default")
	rest, err := parseFlags(fs, args, 0)
	if err != nil {
		return err
	}
	if *file == "" || len(rest) > 0 {
		return usageError("runs submit takes -f FILE and no arguments")
	}
	body, err := readRunFile(*file)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	k := *key
	if k == "" {
		k = client.NewIdempotencyKey()
	}
	var raw []byte
	r, created, err := sdk.SubmitRun(c.ctx, body, k, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	if !created {
		fmt.Fprintln(c.stdout, "Already submitted:")
	}
	printRun(c.stdout, r)
	fmt.Fprintf(c.stdout, "Follow it: clusterdeck gpu runs logs %s --follow\n", r.ID)
	return nil
}

// readRunFile reads a run file strictly: an unknown field is an error.
func readRunFile(path string) (api.RunBody, error) {
	var body api.RunBody
	f, err := os.Open(path)
	if err != nil {
		return body, usageError(err.Error())
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRunFile+1))
	if err != nil {
		return body, err
	}
	if len(data) > maxRunFile {
		return body, usageError(fmt.Sprintf("%s is larger than %d KiB", path, maxRunFile>>10))
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	var y runYAML
	if err := dec.Decode(&y); err != nil {
		return body, usageError(fmt.Sprintf("%s: %v", path, err))
	}
	return api.RunBody(y), nil
}

// runYAML is api.RunBody under YAML tags (the same names).
type runYAML struct {
	Name              string            `yaml:"name"`
	Accelerator       string            `yaml:"accelerator"`
	Nodes             int               `yaml:"nodes"`
	GPUsPerNode       int               `yaml:"gpusPerNode"`
	Offers            []string          `yaml:"offers"`
	MaxHourlyPrice    string            `yaml:"maxHourlyPrice"`
	Location          string            `yaml:"location"`
	VolumeGB          int               `yaml:"volumeGb"`
	VolumeID          string            `yaml:"volumeId"`
	Image             string            `yaml:"image"`
	Command           string            `yaml:"command"`
	Env               map[string]string `yaml:"env"`
	CheckpointDir     string            `yaml:"checkpointDir"`
	CheckpointSeconds int               `yaml:"checkpointSeconds"`
	ResumeCommand     string            `yaml:"resumeCommand"`
	ResumeEnv         map[string]string `yaml:"resumeEnv"`
	RestartBudget     int               `yaml:"restartBudget"`
	FinishRule        string            `yaml:"finishRule"`
	HookURL           string            `yaml:"hookUrl"`
	Verify            *bool             `yaml:"verify"`
	SSHKeyIDs         []string          `yaml:"sshKeyIds"`
}

func (c *gpuCLI) listRuns(args []string) error {
	fs := c.flagSet("list", "runs list")
	if _, err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) ([]api.Run, error) { return sdk.Runs(c.ctx, raw) },
		func(w io.Writer, rs []api.Run) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tNODES\tRESTARTS\tETTR\tCLUSTER")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d × %d\t%d/%d\t%s %%\t%s\n", r.ID, r.Name, r.Status, r.Nodes, r.GPUsPerNode,
					r.Restarts, r.RestartBudget, r.Bill.ETTRPercent, r.ClusterID)
			}
			tw.Flush()
		})
}

func (c *gpuCLI) getRun(args []string) error {
	id, err := oneID(c.flagSet("get", "runs get ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Run, error) { return sdk.Run(c.ctx, id, raw) }, printRun)
}

// runLogs is `gpu runs logs ID [--node N] [--follow]`: its cluster's logs (N6).
func (c *gpuCLI) runLogs(args []string) error {
	var id string
	var rest []string
	for _, a := range args {
		if id == "" && !strings.HasPrefix(a, "-") {
			id = a
			continue
		}
		rest = append(rest, a)
	}
	if id == "" {
		return usageError("runs logs takes a run id")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	r, err := sdk.Run(c.ctx, id)
	if err != nil {
		return err
	}
	return c.logs(append([]string{r.ClusterID}, rest...))
}

func printRun(w io.Writer, r api.Run) {
	fmt.Fprintf(w, "Run %s %q: %s\n  %s\n", r.ID, r.Name, r.Status, r.Message)
	fmt.Fprintf(w, "  Cluster %s: %d × %d %s at $%s/h (locked)\n", r.ClusterID, r.Nodes, r.GPUsPerNode, r.Accelerator, r.USDPerHour)
	fmt.Fprintf(w, "  Checkpoints in %s; restarts %d of %d; finishes when %s\n", r.CheckpointDir, r.Restarts, r.RestartBudget,
		map[string]string{"all": "every rank exits 0", "rank0": "rank 0 exits 0"}[r.FinishRule])
	fmt.Fprintf(w, "  ETTR %s %%: %d productive minutes, %d paid machine-minutes, %d minutes lost\n", r.Bill.ETTRPercent,
		r.Bill.ProductiveMinutes, r.Bill.PaidMachineMinutes, r.Bill.LostMinutes)
	for _, i := range r.Interruptions {
		resumed := "not yet resumed"
		if i.ResumeSeconds != nil {
			resumed = fmt.Sprintf("resumed %ds later", *i.ResumeSeconds)
		}
		fmt.Fprintf(w, "  - %s %s (%s): detected after %ds, %s, %ds of work lost\n", i.DetectedAt.Format("2006-01-02 15:04"), i.Node,
			i.Cause, i.DetectionSeconds, resumed, i.LostSeconds)
	}
}
