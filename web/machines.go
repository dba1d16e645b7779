package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// The operator's own machines (OP1): those of the ssh provider's machines
// file, read-only, and those added here, which the provider reads at every
// catalog run. Adding and removing are use cases in models (audited).

// adminMachines is GET /admin/machines.
func (h *handler) adminMachines(c echo.Context) error {
	p, err := h.machinesPage(c, views.AdminMachinesForm(), nil)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminMachinesView(p))
}

// machinesPage lists the file's machines, then the stored ones.
func (h *handler) machinesPage(c echo.Context, form views.AdminMachineForm, problems map[string]string) (views.AdminMachinesPage, error) {
	stored, err := h.Store.SSHMachines(c.Request().Context())
	if err != nil {
		return views.AdminMachinesPage{}, err
	}
	p := views.AdminMachinesPage{Meta: h.meta(c, "Machines"), Enabled: slices.Contains(h.Config.Providers, models.SSHProvider),
		File: h.Config.SSHMachinesFile, Form: form, Problems: problems, Accelerators: models.Accelerators}
	var fileNames []string
	for _, m := range h.Config.SSHFileMachines {
		p.Rows = append(p.Rows, machineRow(m, true))
		fileNames = append(fileNames, m.Name)
	}
	for _, m := range stored {
		r := machineRow(m, false)
		if m.KeySealed != "" {
			if _, err := h.Store.SSHMachineKey(m); err != nil {
				r.KeyBroken = true
			}
		}
		r.Shadowed = slices.Contains(fileNames, m.Name)
		p.Rows = append(p.Rows, r)
	}
	return p, nil
}

// machineRow is m as the page shows it: never its key, only where it is.
func machineRow(m models.SSHMachine, fromFile bool) views.AdminMachineRow {
	r := views.AdminMachineRow{Name: m.Name, FromFile: fromFile, Login: m.User + "@" + m.Host + ":" + strconv.Itoa(m.Port),
		Price: models.PriceUSD(m.PricePerHour) + "/h", Location: m.Location, Shape: "no GPU"}
	switch {
	case m.KeySealed != "":
		r.Key = "pasted key (stored sealed)"
	case m.KeyPath != "":
		r.Key = "key file " + m.KeyPath
	}
	if m.GPUs > 0 {
		r.Shape = strconv.Itoa(m.GPUs) + "× " + m.Accelerator
	}
	if m.LocationName != "" && m.LocationName != m.Location {
		r.Location += " (" + m.LocationName + ")"
	}
	return r
}

// addMachine is POST /admin/machines.
func (h *handler) addMachine(c echo.Context) error {
	in := models.SSHMachineInput{Name: trimForm(c, "name"), Host: trimForm(c, "host"), Port: trimForm(c, "port"), User: trimForm(c, "user"),
		KeyPath: trimForm(c, "key_path"), PrivateKey: trimForm(c, "private_key"), HostKey: trimForm(c, "host_key"),
		GPUs: trimForm(c, "gpus"), Accelerator: trimForm(c, "accelerator"), VCPUs: trimForm(c, "vcpus"), MemoryGB: trimForm(c, "memory_gb"),
		RootDiskGB: trimForm(c, "root_disk_gb"), Location: trimForm(c, "location"), LocationName: trimForm(c, "location_name"),
		PriceHour: trimForm(c, "price")}
	var fileNames []string
	for _, m := range h.Config.SSHFileMachines {
		fileNames = append(fileNames, m.Name)
	}
	m, err := h.act(c).AddSSHMachine(c.Request().Context(), in, fileNames)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		// The pasted key is not sent back: the form asks for it again.
		form := views.AdminMachineForm{Name: in.Name, Host: in.Host, Port: in.Port, User: in.User, KeyPath: in.KeyPath, HostKey: in.HostKey,
			GPUs: in.GPUs, Accelerator: in.Accelerator, VCPUs: in.VCPUs, MemoryGB: in.MemoryGB, RootDiskGB: in.RootDiskGB,
			Location: in.Location, LocationName: in.LocationName, Price: in.PriceHour}
		if in.PrivateKey != "" {
			if _, keyBad := fe["key"]; !keyBad {
				fe["key"] = "Paste the key again (it is never sent back to the browser)."
			}
		}
		p, perr := h.machinesPage(c, form, fe)
		if perr != nil {
			return perr
		}
		return render(c, http.StatusUnprocessableEntity, views.AdminMachinesView(p))
	}
	if err != nil {
		return err
	}
	msg := "Machine " + m.Name + " added; the catalog's next run sells it."
	if !slices.Contains(h.Config.Providers, models.SSHProvider) {
		msg = "Machine " + m.Name + " added; add ssh to PROVIDERS to sell it."
	}
	_ = h.flash(c, views.FlashSuccess, msg)
	return redirect(c, "/admin/machines")
}

// removeMachine is POST /admin/machines/{name}/delete: refused with 409
// while a cluster uses the machine; a machine of the file is not removed here.
func (h *handler) removeMachine(c echo.Context) error {
	name := c.Param("name")
	for _, m := range h.Config.SSHFileMachines {
		if m.Name == name {
			return echo.NewHTTPError(http.StatusConflict, "Machine "+name+" is listed in the machines file; remove it there and restart.")
		}
	}
	err := h.act(c).RemoveSSHMachine(c.Request().Context(), name)
	var inUse *models.MachineInUseError
	if errors.As(err, &inUse) {
		return echo.NewHTTPError(http.StatusConflict, inUse.Error())
	}
	if errors.Is(err, models.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "No machine is called "+strconv.Quote(name)+".")
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Machine "+name+" removed; the catalog's next run stops selling it.")
	return redirect(c, "/admin/machines")
}
