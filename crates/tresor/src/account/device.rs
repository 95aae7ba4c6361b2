//! The device a session was opened from, in words, from its User-Agent:
//! the browser and the system ("Firefox on Windows"), for the player's
//! list of sessions. A guess for people, never a check.

/// The browser and the system named in a User-Agent, each `None` when not
/// recognised: the page words them in its language ("Chrome sous Linux").
pub fn parts(user_agent: Option<&str>) -> (Option<&'static str>, Option<&'static str>) {
    let Some(agent) = user_agent.filter(|a| !a.trim().is_empty()) else {
        return (None, None);
    };
    // Order matters: Edge and Opera say Chrome too, Chrome says Safari.
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
        ("curl/", "curl"),
    ];
    let system = [
        ("Android", "Android"),
        ("iPhone", "iPhone"),
        ("iPad", "iPad"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ];
    let named = |marks: &[(&str, &'static str)]| {
        marks
            .iter()
            .find(|(mark, _)| agent.contains(mark))
            .map(|(_, name)| *name)
    };
    (named(&browser), named(&system))
}

/// "Browser on System", or "Unknown device" when neither is recognised.
pub fn describe(user_agent: Option<&str>) -> String {
    match parts(user_agent) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_owned(),
        (None, Some(s)) => format!("A browser on {s}"),
        (None, None) => "Unknown device".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_agents_are_named_and_others_are_unknown() {
        assert_eq!(
            describe(Some(
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0"
            )),
            "Edge on Windows"
        );
        assert_eq!(
            describe(Some(
                "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
            )),
            "Firefox on Linux"
        );
        assert_eq!(
            describe(Some(
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
            )),
            "Safari on iPhone"
        );
        assert_eq!(describe(Some("something")), "Unknown device");
        assert_eq!(
            super::parts(Some(
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
            )),
            (Some("Chrome"), Some("Linux"))
        );
        assert_eq!(super::parts(Some(" ")), (None, None));
        assert_eq!(describe(None), "Unknown device");
    }
}
