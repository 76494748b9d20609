//! Probes that ask about a dumped batch: padding, label masks, pad token, packing, label
//! range, input normalisation, class balance, latent scale, image tokens, the trainer's
//! schema, the EOS target and images reaching the text.

use crate::probe::ProbeSpec;

pub mod class_balance;
pub mod dumps;
pub mod image_tokens;
pub mod input_norm;
pub mod label_mask;
pub mod label_range;
pub mod latent_std;
pub mod packing_positions;
pub mod pad_side;
pub mod pad_token;
pub mod read;
pub mod schema;
#[cfg(test)]
mod seq2seq_tests;

/// The batch probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    pad_side::PAD_SIDE,
    label_mask::LABEL_MASK,
    pad_token::PAD_TOKEN,
    packing_positions::PACKING_POSITIONS,
    label_range::LABEL_RANGE,
    input_norm::INPUT_NORM,
    class_balance::CLASS_BALANCE,
    latent_std::LATENT_STD,
    image_tokens::IMAGE_TOKENS,
    schema::BATCH_SCHEMA,
    schema::EOS_TARGET,
    schema::IMAGE_PRESENCE,
    dumps::CAPTION_DROP,
    dumps::EVAL_DETERMINISM,
];
