//! `latent_std` (DF3): diffusion latents at about unit variance.

use std::path::PathBuf;

use crate::config::{ModelConfig, VaeConfig};
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;

use crate::probes::batch::read::*;
use crate::probes::util::*;

// ---------------------------------------------------------------------------------------
// DF3: latent scale

/// The VAE config of the run (a `config.json` with `scaling_factor` / an Autoencoder class).
fn vae_config(ctx: &ProbeCtx) -> Option<(PathBuf, VaeConfig)> {
    for a in ctx.run.of_kind(ArtifactKind::ModelConfig) {
        if let Ok(c) = ModelConfig::read(&a.path) {
            if c.is_vae() {
                return Some((a.path.clone(), VaeConfig::from_value(c.raw)));
            }
        }
    }
    None
}
pub(super) const LATENT_STD: ProbeSpec = ProbeSpec {
    id: "latent_std",
    entries: &["DF3"],
    inputs: &["batch:latents", "config:vae.scaling_factor"],
    params: &["std_lo", "std_hi", "sd_factor", "factor_tol"],
    outcomes: &["pass", "off_scale", "skip"],
    run: latent_std,
};

pub fn latent_std(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (lo, hi, sd) = (
        p!(ctx, "DF3", "std_lo"),
        p!(ctx, "DF3", "std_hi"),
        p!(ctx, "DF3", "sd_factor"),
    );
    let factor_tol = p!(ctx, "DF3", "factor_tol");
    let vae = vae_config(ctx);
    over_batches(ctx, "DF3", "no batch carries a latents tensor", |b| {
        let t = b.find(LATENTS)?;
        if t.checked_numel() == Some(0) {
            return Some(Verdict::skip(
                "DF3",
                format!("tensor `{}` is empty (shape {:?})", t.name, t.shape),
            ));
        }
        let s = match b.file.stats(&t.name) {
            Ok(s) => s,
            Err(e) => return Some(Verdict::skip("DF3", e.to_string())),
        };
        let factor = if s.std > 0.0 { 1.0 / s.std } else { f64::NAN };
        let mut measured = format!(
            "latent std {}, mean {} over {} values → factor 1/std = {}",
            fmt(s.std),
            fmt(s.mean),
            s.count,
            fmt(factor)
        );
        if s.nonfinite() > 0 {
            measured.push_str(&format!("; {} non-finite", s.nonfinite()));
        }
        let mut v = Verdict::new("DF3", Status::Pass, "pass")
            .measured(measured)
            .expected(format!("std in [{lo}, {hi}] (about unit variance)"))
            .evidence(b.ev(&t.name))
            .value("std", s.std)
            .value("mean", s.mean)
            .value("factor", factor);
        let vae_sf = vae.as_ref().and_then(|(_, c)| c.scaling_factor);
        if let Some((p, c)) = &vae {
            v = v.evidence(Evidence::file(p).note(format!(
                "scaling_factor {}",
                c.scaling_factor.map(fmt).unwrap_or_else(|| "absent".into())
            )));
        }
        let near = |a: f64, b: f64| a.is_finite() && b > 0.0 && (a / b - 1.0).abs() <= factor_tol;
        if s.finite == 0 || s.nonfinite() > 0 {
            v.status = Status::Fail;
            v.outcome = "off_scale".into();
            v.message = "non-finite latents: the VAE encode overflowed (fp16 VAE — run it in fp32) or the inputs were NaN".into();
            return Some(v);
        }
        if (lo..=hi).contains(&s.std) {
            v.message = "latents are about unit variance".into();
            return Some(v);
        }
        v.status = Status::Fail;
        v.outcome = "off_scale".into();
        // The factor to judge with: the run's VAE config, else the VAE family the latent
        // channel count points at (4: SD1.x 0.18215 / SDXL 0.13025; 16: SD3 1.5305 / FLUX
        // 0.3611, both with a shift), whichever explains the measured std.
        let channels = (t.shape.len() == 4).then(|| t.shape[1]);
        let families: Vec<(f64, &str)> = match (vae_sf, channels) {
            (Some(f), _) => vec![(f, "vae.config.scaling_factor")],
            (None, Some(4)) => vec![
                (sd, "the SD1.x VAE scaling_factor"),
                (0.13025, "the SDXL VAE scaling_factor"),
            ],
            (None, Some(16)) => vec![
                (
                    1.5305,
                    "the SD3 VAE scaling_factor (after subtracting shift_factor 0.0609)",
                ),
                (
                    0.3611,
                    "the FLUX VAE scaling_factor (after subtracting shift_factor 0.1159)",
                ),
            ],
            _ => vec![(sd, "the SD-VAE scaling_factor")],
        };
        let (sf, src) = families
            .iter()
            .copied()
            .find(|(f, _)| near(s.std * f, 1.0) || near(s.std, *f))
            .unwrap_or(families[0]);
        v.message = if near(s.std * sf, 1.0) {
            format!("unscaled VAE latents (std ≈ 1/{sf}): multiply by {src} = {sf} when encoding (latents = vae.encode(x).latent_dist.sample() * {sf}) and divide by it before decoding")
        } else if near(s.std, sf) {
            format!(
                "latents scaled twice (std ≈ {src} {}): multiply by the factor once",
                fmt(sf)
            )
        } else if s.std > hi {
            format!("latents far from unit variance: a custom VAE needs its own factor — measure the std over a data sample and set scaling_factor = 1/std ≈ {} rather than copying {}", fmt(factor), fmt(sd))
        } else {
            format!("latents much smaller than unit variance: the factor is applied twice or is too small — set scaling_factor = 1/std ≈ {} (measured on data)", fmt(factor))
        };
        Some(v)
    })
}
