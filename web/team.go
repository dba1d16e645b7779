package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// teamPage builds /settings/team (owners and admins).
func (h *handler) teamPage(c echo.Context) (views.TeamPage, error) {
	p := principal(c)
	ctx := c.Request().Context()
	members, err := h.Store.Members(ctx, p.Org.ID)
	if err != nil {
		return views.TeamPage{}, err
	}
	invites, err := h.Store.PendingInvites(ctx, p.Org.ID)
	if err != nil {
		return views.TeamPage{}, err
	}
	tp := views.TeamPage{Meta: h.meta(c, "Team"), Nav: settingsNav(p, "team"), OrgName: p.Org.Name,
		Form: views.InviteForm{Role: string(models.RoleMember)}}
	for _, r := range []models.Role{models.RoleOwner, models.RoleAdmin, models.RoleMember} {
		if p.Role.CanGrant(r) {
			tp.Roles = append(tp.Roles, string(r))
		}
	}
	owners := 0
	for _, m := range members {
		if m.Role == models.RoleOwner {
			owners++
		}
	}
	for _, m := range members {
		tp.Members = append(tp.Members, views.MemberRow{UserID: m.UserID, Email: m.Email, Name: m.Name,
			Role: string(m.Role), Joined: views.FormatTime(m.CreatedAt), Self: m.UserID == p.User.ID,
			CanEdit: p.Role.CanGrant(m.Role), OnlyOwner: m.Role == models.RoleOwner && owners == 1 && p.Role.CanGrant(m.Role)})
	}
	for _, i := range invites {
		tp.Invites = append(tp.Invites, views.InviteRow{ID: i.ID, Email: i.Email, Role: string(i.Role),
			Expires: views.FormatTime(i.ExpiresAt)})
	}
	return tp, nil
}

// showTeam is GET /settings/team.
func (h *handler) showTeam(c echo.Context) error {
	tp, err := h.teamPage(c)
	if err != nil {
		return err
	}
	return page(c, http.StatusOK, views.TeamPageView(tp), views.TeamSection(tp))
}

// teamProblems re-renders the team page with 422 and the problems.
func (h *handler) teamProblems(c echo.Context, fe models.FieldErrors, form views.InviteForm) error {
	tp, err := h.teamPage(c)
	if err != nil {
		return err
	}
	tp.Problems = fe
	if form.Role != "" {
		tp.Form = form
	}
	return page(c, http.StatusUnprocessableEntity, views.TeamPageView(tp), views.TeamSection(tp))
}

// inviteMember is POST /settings/team/invites: the invitation and its mail
// (through the outbox) commit together, with the audit entry.
func (h *handler) inviteMember(c echo.Context) error {
	form := views.InviteForm{Email: models.NormalizeEmail(c.FormValue("email")), Role: trimForm(c, "role")}
	_, err := h.act(c).Invite(c.Request().Context(), models.InviteInput{Email: form.Email, Role: models.Role(form.Role),
		BaseURL: h.Config.BaseURL})
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		return h.teamProblems(c, fe, form)
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Invitation sent to "+form.Email+".")
	return redirect(c, "/settings/team")
}

// revokeInvite is POST /settings/team/invites/{id}/revoke.
func (h *handler) revokeInvite(c echo.Context) error {
	inv, err := h.act(c).RevokeInvite(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Invitation to "+inv.Email+" cancelled.")
	return redirect(c, "/settings/team")
}

// changeRole is POST /settings/team/members/{id}/role.
func (h *handler) changeRole(c echo.Context) error {
	_, err := h.act(c).ChangeRole(c.Request().Context(), c.Param("id"), models.Role(trimForm(c, "role")))
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		return h.teamProblems(c, fe, views.InviteForm{})
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Role changed.")
	return redirect(c, "/settings/team")
}

// removeMember is POST /settings/team/members/{id}/remove: their API keys in
// this org are revoked and their SSH keys here deleted.
func (h *handler) removeMember(c echo.Context) error {
	p := principal(c)
	m, err := h.act(c).RemoveMember(c.Request().Context(), c.Param("id"))
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		return h.teamProblems(c, fe, views.InviteForm{})
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, m.Email+" was removed from "+p.Org.Name+".")
	if m.UserID == p.User.ID {
		return redirect(c, "/settings")
	}
	return redirect(c, "/settings/team")
}

// showAudit is GET /settings/audit?before=SEQ (owners and admins).
func (h *handler) showAudit(c echo.Context) error {
	p := principal(c)
	var before int64
	if s := c.QueryParam("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "before must be an entry number.")
		}
		before = n
	}
	recs, more, err := h.Store.AuditRecords(c.Request().Context(), p.Org.ID, before, models.AuditPageSize)
	if err != nil {
		return err
	}
	ap := views.AuditPage{Meta: h.meta(c, "Audit log"), Nav: settingsNav(p, "audit")}
	for _, r := range recs {
		ap.Rows = append(ap.Rows, views.AuditRow{When: views.FormatTime(r.CreatedAt), Actor: r.Actor, Action: r.Action,
			Target: r.Target, IP: r.IP, Detail: r.Detail})
	}
	if more {
		ap.NextURL = "/settings/audit?before=" + strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	return page(c, http.StatusOK, views.AuditPageView(ap), views.AuditPageView(ap))
}
