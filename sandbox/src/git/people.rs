//! Who the forge's users and bots are: logins, display names, ids and the e-mail addresses their commits
//! carry. Git stores only a name and an address; the forge maps the address back to a login, as GitHub does.

/// The release operator's bot login: it commits dev moves and derived files.
pub const RELEASE_OPERATOR: &str = "release-operator[bot]";
/// The schema operator's bot login: it commits derived schema files.
pub const SCHEMA_OPERATOR: &str = "schema-operator[bot]";
/// The platform CI's bot login: it runs the forge's checks, and as Tower's own CI it bumps Tower's version in
/// `infra/` ([`ci_bot`] of `tower`).
pub const CI_BOT: &str = "tower-ci[bot]";
/// The Tower GitHub App's bot login: pull requests Tower opens are this user's.
pub const APP_BOT: &str = "tower-app[bot]";
/// A signed-in user who belongs to no team.
pub const VISITOR: &str = "visitor";

/// People of the fixture organisation with their display names, in a fixed order that gives their ids.
const PEOPLE: [(&str, &str); 8] = [
    ("ada", "Ada Lovelace"),
    ("grace", "Grace Hopper"),
    ("linus", "Linus Torvalds"),
    ("margaret", "Margaret Hamilton"),
    ("barbara", "Barbara Liskov"),
    ("ken", "Ken Thompson"),
    ("root", "Platform Admin"),
    (VISITOR, "Vera Visitor"),
];

const BOTS: [&str; 4] = [RELEASE_OPERATOR, SCHEMA_OPERATOR, CI_BOT, APP_BOT];

/// A forge account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The login, e.g. `ada` or `release-operator[bot]`.
    pub login: String,
    /// Display name.
    pub name: String,
    /// The address commits carry.
    pub email: String,
    /// Numeric account id.
    pub id: u64,
    /// Whether it is a bot (GitHub's `type: "Bot"`).
    pub bot: bool,
}

/// The CI bot of an in-house platform component (`release-operator-ci[bot]`): after a green build of the
/// component it commits the version bump to `infra/` and `values/`.
pub fn ci_bot(component: &str) -> String {
    format!("{component}-ci[bot]")
}

/// The identity behind `login`; unknown logins get a stable made-up id (and a bot, GitHub's no-reply
/// address).
pub fn identity(login: &str) -> Identity {
    if let Some(index) = PEOPLE.iter().position(|(l, _)| *l == login) {
        return Identity {
            login: login.into(),
            name: PEOPLE[index].1.into(),
            email: format!("{login}@acme.example"),
            id: 1001 + index as u64,
            bot: false,
        };
    }
    if let Some(index) = BOTS.iter().position(|b| *b == login) {
        let id = 9001 + index as u64;
        return Identity {
            login: login.into(),
            name: login.into(),
            // GitHub's no-reply form, `<id>+<login>@users.noreply.github.com`, which bots commit with.
            email: format!("{id}+{login}@users.noreply.github.com"),
            id,
            bot: true,
        };
    }
    let id = 5000
        + login
            .bytes()
            .fold(0u64, |h, b| (h * 31 + u64::from(b)) % 4000);
    let bot = login.ends_with("[bot]");
    Identity {
        login: login.into(),
        name: login.into(),
        email: if bot {
            format!("{id}+{login}@users.noreply.github.com")
        } else {
            format!("{login}@acme.example")
        },
        id,
        bot,
    }
}

/// The login an e-mail address of [`identity`] belongs to.
pub fn login_of_email(email: &str) -> String {
    let local = email.split('@').next().unwrap_or(email);
    match local.split_once('+') {
        Some((_, login)) if email.ends_with("@users.noreply.github.com") => login.into(),
        _ => local.into(),
    }
}

/// Every demo identity one can sign in as: each team member, the admins and the outside visitor.
pub fn demo_logins() -> Vec<&'static str> {
    PEOPLE.iter().map(|(login, _)| *login).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_map_back_to_logins() {
        let component_bot = ci_bot("release-operator");
        for login in ["ada", RELEASE_OPERATOR, "someone", component_bot.as_str()] {
            assert_eq!(login_of_email(&identity(login).email), login);
        }
        assert!(identity(RELEASE_OPERATOR).bot);
        assert!(identity(&component_bot).bot);
        assert!(!identity("ada").bot);
    }
}
