package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// sshKeysPage builds /settings/ssh-keys for the signed-in user.
func (h *handler) sshKeysPage(c echo.Context) (views.SSHKeysPage, error) {
	p := principal(c)
	keys, err := h.Store.SSHKeys(c.Request().Context(), p.Org.ID, p.User.ID)
	if err != nil {
		return views.SSHKeysPage{}, err
	}
	sp := views.SSHKeysPage{Meta: h.meta(c, "SSH keys"), Nav: settingsNav(p, "ssh-keys"), Next: launchNext(c.FormValue("next"))}
	for _, k := range keys {
		typ, _, _ := strings.Cut(k.PublicKey, " ")
		sp.Keys = append(sp.Keys, views.SSHKeyRow{ID: k.ID, Name: k.Name, Type: typ, Fingerprint: k.Fingerprint,
			Added: views.FormatTime(k.CreatedAt)})
	}
	return sp, nil
}

// listSSHKeys is GET /settings/ssh-keys.
func (h *handler) listSSHKeys(c echo.Context) error {
	sp, err := h.sshKeysPage(c)
	if err != nil {
		return err
	}
	return page(c, http.StatusOK, views.SSHKeysPageView(sp), views.SSHKeysPageView(sp))
}

// addSSHKey is POST /settings/ssh-keys: real OpenSSH public keys only.
func (h *handler) addSSHKey(c echo.Context) error {
	form := views.SSHKeyForm{Name: trimForm(c, "name"), PublicKey: trimForm(c, "public_key")}
	key, err := h.act(c).AddSSHKey(c.Request().Context(), form.Name, form.PublicKey)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		sp, err := h.sshKeysPage(c)
		if err != nil {
			return err
		}
		sp.Form, sp.Problems = form, fe
		return page(c, http.StatusUnprocessableEntity, views.SSHKeysPageView(sp), views.SSHKeyFormView(sp))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Key "+key.Name+" added ("+key.Fingerprint+").")
	if next := launchNext(c.FormValue("next")); next != "" {
		return redirect(c, next) // back to the launch page, where the new key is ticked
	}
	return redirect(c, "/settings/ssh-keys")
}

// launchNext is next when it is a launch page ("Add an SSH key" there comes
// back to it), "" otherwise.
func launchNext(next string) string {
	if next = safeNext(next); strings.HasPrefix(next, "/clusters/new?") {
		return next
	}
	return ""
}

// deleteSSHKey is POST /settings/ssh-keys/{id}/delete (your own keys only).
func (h *handler) deleteSSHKey(c echo.Context) error {
	key, err := h.act(c).DeleteSSHKey(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Key "+key.Name+" deleted.")
	return redirect(c, "/settings/ssh-keys")
}

// apiKeysPage builds /settings/api-keys.
func (h *handler) apiKeysPage(c echo.Context) (views.APIKeysPage, error) {
	p := principal(c)
	ctx := c.Request().Context()
	keys, err := h.Store.APIKeys(ctx, p.Org.ID)
	if err != nil {
		return views.APIKeysPage{}, err
	}
	envs, err := h.Store.Environments(ctx, p.Org.ID)
	if err != nil {
		return views.APIKeysPage{}, err
	}
	ap := views.APIKeysPage{Meta: h.meta(c, "API keys"), Nav: settingsNav(p, "api-keys"),
		Form: views.APIKeyForm{Environment: p.Env.ID}}
	for _, e := range envs {
		ap.Envs = append(ap.Envs, views.EnvOption{ID: e.ID, Name: e.Name})
	}
	for _, k := range keys {
		ap.Keys = append(ap.Keys, views.APIKeyRowView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Env: k.EnvName,
			CreatedBy: k.CreatorEmail, Created: views.FormatTime(k.CreatedAt), LastUsed: views.FormatTimePtr(k.LastUsedAt),
			Revoked: k.RevokedAt != nil, CanRevoke: canRevokeKey(p, k.APIKey)})
	}
	return ap, nil
}

// canRevokeKey: owners and admins revoke any key; members their own.
func canRevokeKey(p *Principal, k models.APIKey) bool {
	uid := ""
	if p.User != nil {
		uid = p.User.ID
	}
	return models.CanRevokeAPIKey(p.Role, uid, k)
}

// listAPIKeys is GET /settings/api-keys.
func (h *handler) listAPIKeys(c echo.Context) error {
	ap, err := h.apiKeysPage(c)
	if err != nil {
		return err
	}
	return page(c, http.StatusOK, views.APIKeysPageView(ap), views.APIKeysSection(ap))
}

// createAPIKey is POST /settings/api-keys: the answer shows the token once
// (it is stored hashed), so it is rendered, not redirected, and not cached.
func (h *handler) createAPIKey(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	form := views.APIKeyForm{Name: trimForm(c, "name"), Environment: trimForm(c, "environment")}
	key, token, err := h.act(c).CreateAPIKey(ctx, form.Environment, form.Name)
	var fe models.FieldErrors
	status := http.StatusOK
	if errors.As(err, &fe) {
		status = http.StatusUnprocessableEntity
	} else if err != nil {
		return err
	}
	ap, err := h.apiKeysPage(c)
	if err != nil {
		return err
	}
	if status == http.StatusOK {
		env, _ := h.Store.EnvironmentForOrg(ctx, p.Org.ID, key.EnvID)
		ap.Created = &views.CreatedKey{Name: key.Name, Env: env.Name, Token: token}
	} else {
		ap.Form, ap.Problems = form, fe
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return page(c, status, views.APIKeysPageView(ap), views.APIKeysSection(ap))
}

// revokeAPIKey is POST /settings/api-keys/{id}/revoke.
func (h *handler) revokeAPIKey(c echo.Context) error {
	k, err := h.act(c).RevokeAPIKey(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Key "+k.Name+" revoked: it no longer works.")
	return redirect(c, "/settings/api-keys")
}

// apiMe is GET /v1/me: the org, environment and role the credentials act as.
func (h *handler) apiMe(c echo.Context) error {
	p := principal(c)
	var out api.Me
	out.Org.ID, out.Org.Name, out.Org.MaxMachines, out.Org.MaxGPUs = p.Org.ID, p.Org.Name, p.Org.MaxMachines, p.Org.MaxGPUs
	out.Environment.ID, out.Environment.Name = p.Env.ID, p.Env.Name
	out.Role, out.Actor = string(p.Role), p.Actor
	if p.User != nil {
		out.Email = p.User.Email
	}
	return c.JSON(http.StatusOK, out)
}
