package web

import (
	"errors"
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

func settingsNav(p *Principal, active string) views.SettingsNav {
	return views.SettingsNav{Active: active, CanTeam: p.Role.CanManage()}
}

// profilePage builds /settings for the signed-in user.
func (h *handler) profilePage(c echo.Context) (views.ProfilePage, error) {
	p := principal(c)
	orgs, err := h.Store.OrgsForUser(c.Request().Context(), p.User.ID)
	if err != nil {
		return views.ProfilePage{}, err
	}
	pp := views.ProfilePage{Meta: h.meta(c, "Settings"), Nav: settingsNav(p, "profile"),
		Name: p.User.Name, Email: p.User.Email}
	for _, o := range orgs {
		pp.Orgs = append(pp.Orgs, views.OrgChoice{ID: o.OrgID, Name: o.OrgName, Role: string(o.Role), Current: o.OrgID == p.Org.ID})
	}
	return pp, nil
}

// showSettings is GET /settings.
func (h *handler) showSettings(c echo.Context) error {
	pp, err := h.profilePage(c)
	if err != nil {
		return err
	}
	return page(c, http.StatusOK, views.ProfilePageView(pp), views.ProfilePageView(pp))
}

// updateProfile is POST /settings/profile.
func (h *handler) updateProfile(c echo.Context) error {
	name := trimForm(c, "name")
	err := h.act(c).UpdateProfile(c.Request().Context(), name)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		pp, err := h.profilePage(c)
		if err != nil {
			return err
		}
		pp.Name, pp.Problems = name, fe
		return page(c, http.StatusUnprocessableEntity, views.ProfilePageView(pp), views.ProfileForm(pp))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Your name is saved.")
	return redirect(c, "/settings")
}

// changePassword is POST /settings/password: checks the current password,
// bumps the session version (every other session is logged out) and gives
// this browser a fresh session at the new version.
func (h *handler) changePassword(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	current, next, confirm := c.FormValue("current_password"), c.FormValue("new_password"), c.FormValue("confirm_password")
	problems := models.FieldErrors{}
	if next != confirm {
		problems["confirm_password"] = "The two new passwords differ."
	}
	var u models.User
	var err error
	if len(problems) == 0 {
		u, err = h.act(c).ChangePassword(ctx, current, next)
		if fe := (models.FieldErrors{}); errors.As(err, &fe) {
			problems = fe
		} else if err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		pp, err := h.profilePage(c)
		if err != nil {
			return err
		}
		pp.PasswordProblems = problems
		return page(c, http.StatusUnprocessableEntity, views.ProfilePageView(pp), views.PasswordForm(pp))
	}
	if err := h.startSession(c, u, p.Org.ID, p.Env.ID); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Password changed. Every other session was logged out.")
	return redirect(c, "/settings")
}

// revokeSessions is POST /settings/sessions/revoke: log out everywhere else.
func (h *handler) revokeSessions(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	v, err := h.act(c).RevokeSessions(ctx)
	if err != nil {
		return err
	}
	u := *p.User
	u.SessionVersion = v
	if err := h.startSession(c, u, p.Org.ID, p.Env.ID); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Every other session was logged out.")
	return redirect(c, "/settings")
}

// switchOrg is POST /orgs/{id}/switch: work in another of your organisations.
func (h *handler) switchOrg(c echo.Context) error {
	p := principal(c)
	m, err := h.Store.Member(c.Request().Context(), c.Param("id"), p.User.ID)
	if err != nil {
		return err
	}
	org, err := h.Store.OrgByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.setSessionValues(c, map[string]string{"org": org.ID, "env": ""}); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashInfo, "You are now working in "+org.Name+" as "+string(m.Role)+".")
	return redirect(c, "/settings")
}

// environmentsPage builds /settings/environments.
func (h *handler) environmentsPage(c echo.Context) (views.EnvironmentsPage, error) {
	p := principal(c)
	envs, err := h.Store.Environments(c.Request().Context(), p.Org.ID)
	if err != nil {
		return views.EnvironmentsPage{}, err
	}
	ep := views.EnvironmentsPage{Meta: h.meta(c, "Environments"), Nav: settingsNav(p, "environments"), CanCreate: p.Role.CanManage()}
	for _, e := range envs {
		ep.Envs = append(ep.Envs, views.EnvRow{ID: e.ID, Name: e.Name, Created: views.FormatTime(e.CreatedAt),
			Default: e.IsDefault, Current: e.ID == p.Env.ID})
	}
	return ep, nil
}

// listEnvironments is GET /settings/environments.
func (h *handler) listEnvironments(c echo.Context) error {
	ep, err := h.environmentsPage(c)
	if err != nil {
		return err
	}
	return page(c, http.StatusOK, views.EnvironmentsPageView(ep), views.EnvironmentsPageView(ep))
}

// createEnvironment is POST /settings/environments (owners and admins).
func (h *handler) createEnvironment(c echo.Context) error {
	name := trimForm(c, "name")
	env, err := h.act(c).CreateEnvironment(c.Request().Context(), name)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		ep, err := h.environmentsPage(c)
		if err != nil {
			return err
		}
		ep.Name, ep.Problems = name, fe
		return page(c, http.StatusUnprocessableEntity, views.EnvironmentsPageView(ep), views.EnvironmentForm(ep))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Environment "+env.Name+" created.")
	return redirect(c, "/settings/environments")
}

// switchEnvironment is POST /environments/{id}/switch: the dashboard's
// current environment (loaded through the org: another org's is 404).
func (h *handler) switchEnvironment(c echo.Context) error {
	p := principal(c)
	env, err := h.Store.EnvironmentForOrg(c.Request().Context(), p.Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.setSessionValues(c, map[string]string{"org": p.Org.ID, "env": env.ID}); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashInfo, "You are now working in the "+env.Name+" environment.")
	return redirect(c, "/settings/environments")
}
