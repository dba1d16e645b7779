package views

// AdminMachinesPage is /admin/machines (OP1): the machines the operator
// owns, sold by the ssh provider — its machines file's (read-only) and
// those added here — and the form that adds one.
type AdminMachinesPage struct {
	Meta         Meta
	Enabled      bool   // ssh is in PROVIDERS: the machines are sold
	File         string // SSH_MACHINES_FILE, "" when none
	Rows         []AdminMachineRow
	Form         AdminMachineForm
	Problems     map[string]string
	Accelerators []string
}

// AdminMachineRow is one machine.
type AdminMachineRow struct {
	Name      string
	FromFile  bool   // listed in the machines file: changed there, not here
	Login     string // "ubuntu@192.0.2.10:22"
	Key       string // "key file /etc/clusterdeck/id_ed25519" or "pasted key (stored sealed)", never the key
	KeyBroken bool   // a pasted key that no longer opens: not sold until pasted again
	Shape     string // "8× H100_80GB", "no GPU"
	Location  string // "rack-1 (Berlin office)"
	Price     string // "$20.00/h"
	Shadowed  bool   // named like a file machine: the file's is sold
}

// AdminMachineForm is the add-machine form as typed (the pasted key is
// never sent back).
type AdminMachineForm struct {
	Name, Host, Port, User, KeyPath, HostKey string
	GPUs, Accelerator, VCPUs, MemoryGB       string
	RootDiskGB, Location, LocationName       string
	Price                                    string
}

func machineSource(r AdminMachineRow) string {
	if r.FromFile {
		return "file"
	}
	return "page"
}

// AdminMachinesForm is the empty add-machine form with its defaults.
func AdminMachinesForm() AdminMachineForm { return AdminMachineForm{Port: "22", User: "root"} }
