//! `--games N`: a catalogue of the island and N − 1 generated scratch games
//! (each with an emission, as a demo database gets), so that the purchase's
//! cost can be measured with 1 and with 20 games on sale. The players still
//! buy the island's units: what is measured is whether the other games on
//! sale cost a purchase anything.

use anyhow::Context;
use std::path::PathBuf;

/// One generated scratch game: 10,000 units a block at 1 €, 45 % paid back.
pub(crate) fn definition(index: usize) -> String {
    format!(
        "id = \"bench-{index:02}\"\n\
         units_per_block = 10_000\n\
         [name]\n\
         fr = \"Banc {index}\"\n\
         en = \"Bench {index}\"\n\
         [[stakes]]\n\
         cents = 100\n\
         losing_units_per_block = 8_389\n\
         levels = [\n\
             {{ level = 1, units_per_block = 1, prize_cents = 50_000 }},\n\
             {{ level = 2, units_per_block = 10, prize_cents = 10_000 }},\n\
             {{ level = 3, units_per_block = 100, prize_cents = 1_000 }},\n\
             {{ level = 4, units_per_block = 500, prize_cents = 200 }},\n\
             {{ level = 5, units_per_block = 1_000, prize_cents = 100 }},\n\
         ]\n\
         [scene]\n\
         kind = \"scratch\"\n\
         rows = 3\n\
         columns = 3\n\
         identical = 3\n"
    )
}

/// The catalogue folder of `--games N` (removed when dropped), and the
/// servers' flags naming it; none without `--games`.
pub(crate) struct Games {
    dir: Option<PathBuf>,
}

impl Drop for Games {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Games {
    pub(crate) fn new(games: Option<usize>) -> anyhow::Result<Games> {
        let Some(count) = games else {
            return Ok(Games { dir: None });
        };
        let dir = std::env::temp_dir().join(format!(
            "tresor-bench-games-{}-{}",
            std::process::id(),
            crate::players::run_id()
        ));
        std::fs::create_dir_all(&dir).context("cannot make the bench's catalogue folder")?;
        for index in 1..count.max(1) {
            std::fs::write(
                dir.join(format!("bench-{index:02}.toml")),
                definition(index),
            )
            .context("cannot write a generated game")?;
        }
        Ok(Games { dir: Some(dir) })
    }

    /// Prints the catalogue the server at `base` sells (`GET /api/games`),
    /// with `--games` only: what the run was measured with.
    pub(crate) async fn announce(&self, base: &str) -> anyhow::Result<()> {
        if self.dir.is_none() {
            return Ok(());
        }
        let text = crate::players::client()?
            .get(format!("{base}/api/games"))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        let games: Vec<serde_json::Value> = serde_json::from_str(&text)?;
        let on_sale = games
            .iter()
            .filter(|g| {
                g["stakes"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|s| s["on_sale"] == true))
            })
            .count();
        println!(
            "catalogue: {} games, {on_sale} on sale (the island and generated scratch games)",
            games.len()
        );
        Ok(())
    }

    /// `--games DIR` for `tresor serve` (nothing: its default catalogue).
    pub(crate) fn flags(&self) -> Vec<String> {
        match &self.dir {
            Some(dir) => vec!["--games".to_owned(), dir.display().to_string()],
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_generated_game_is_a_valid_definition() {
        let game = tresor_game::Game::parse(&super::definition(7))
            .expect("it reads")
            .leak();
        let payouts = game.check(7_500).expect("it checks");
        assert_eq!(payouts[0].basis_points(), 4_500);
        assert_eq!(game.id(), "bench-07");
    }
}
