//! A glossary of training terms in Chinese, so a query written in it is searched by what it
//! says: the catalog is written in English, and users of Chinese-language training stacks
//! write "lora微调灾难性遗忘" (LoRA fine-tuning, catastrophic forgetting) or "训练报错"
//! (training error). Terms are replaced longest first; what the glossary lacks stays as it is
//! (and is then left out of the search, see `words_the_catalog_can_hold`).

use std::borrow::Cow;

/// (term, English). Compounds come before their parts only through the longest-first match,
/// so the order here does not matter.
const TERMS: &[(&str, &str)] = &[
    ("训练", "training"),
    ("微调", "fine-tuning"),
    ("全参数", "full parameter"),
    ("全量", "full"),
    ("预训练", "pretraining"),
    ("推理", "inference"),
    ("损失函数", "loss function"),
    ("损失", "loss"),
    ("梯度爆炸", "gradient explosion"),
    ("梯度消失", "vanishing gradient"),
    ("梯度", "gradient"),
    ("爆炸", "explodes"),
    ("显存不足", "CUDA out of memory"),
    ("显存不够", "CUDA out of memory"),
    ("爆显存", "CUDA out of memory"),
    ("显存溢出", "CUDA out of memory"),
    ("显存", "GPU memory"),
    ("内存泄漏", "memory leak"),
    ("内存泄露", "memory leak"),
    ("内存", "memory"),
    ("溢出", "overflow"),
    ("报错", "error"),
    ("错误", "error"),
    ("异常", "abnormal"),
    ("失败", "fails"),
    ("卡住", "stuck"),
    ("卡死", "hangs"),
    ("卡在", "stuck at"),
    ("挂起", "hangs"),
    ("超时", "timeout"),
    ("多卡", "multi-GPU"),
    ("单卡", "single GPU"),
    ("多机", "multi-node"),
    ("分布式", "distributed"),
    ("不收敛", "does not converge"),
    ("收敛", "converge"),
    ("不下降", "not decreasing"),
    ("没下降", "not decreasing"),
    ("没怎么下降", "barely decreasing"),
    ("下降", "decreases"),
    ("上升", "increases"),
    ("升高", "increases"),
    ("变大", "increases"),
    ("震荡", "oscillates"),
    ("波动", "fluctuates"),
    ("不变", "unchanged"),
    ("不动", "does not move"),
    ("不涨", "does not increase"),
    ("学习率", "learning rate"),
    ("批大小", "batch size"),
    ("批次", "batch"),
    ("奖励", "reward"),
    ("输出", "output"),
    ("重复", "repeats"),
    ("复读", "repeats"),
    ("乱码", "garbled output"),
    ("胡言乱语", "gibberish"),
    ("准确率", "accuracy"),
    ("精度", "precision"),
    ("混合精度", "mixed precision"),
    ("半精度", "half precision"),
    ("评估", "evaluation"),
    ("验证集", "validation set"),
    ("测试集", "test set"),
    ("过拟合", "overfitting"),
    ("欠拟合", "underfitting"),
    ("灾难性遗忘", "catastrophic forgetting"),
    ("遗忘", "forgetting"),
    ("断点续训", "resume from checkpoint"),
    ("恢复训练", "resume training"),
    ("续训", "resume training"),
    ("权重", "weights"),
    ("冻结", "frozen"),
    ("合并", "merge"),
    ("量化", "quantized"),
    ("截断", "truncated"),
    ("标签", "labels"),
    ("掩码", "mask"),
    ("数据集", "dataset"),
    ("数据", "data"),
    ("速度", "speed"),
    ("很慢", "very slow"),
    ("变慢", "slows down"),
    ("太慢", "too slow"),
    ("一直", "always"),
    ("始终", "always"),
    ("为零", "zero"),
    ("为0", "zero"),
    ("全是", "all"),
    ("停不下来", "never stops"),
    ("不停", "never stops"),
    ("模型", "model"),
    ("效果差", "poor results"),
    ("效果不好", "poor results"),
    ("没有效果", "no effect"),
    ("没效果", "no effect"),
    ("不生效", "no effect"),
    ("无效", "no effect"),
    ("效果", "results"),
    ("结果", "results"),
    ("之后", "after"),
    ("以后", "after"),
    ("奇怪", "weird"),
    ("生成", "generation"),
    ("图像", "image"),
    ("图片", "image"),
    ("文本", "text"),
    ("长度", "length"),
    ("学不到", "not learning"),
    ("学习困难", "not learning"),
    ("无法", "cannot"),
    // Words of trouble and of asking, so a Chinese statement is read as a report or a question
    // as an English one is ("loss 没有除以 token 数导致 grad-norm 过大" reports; "使用deepspeed
    // 有什么优点呢" asks).
    ("没有", "not"),
    ("不起作用", "does not work"),
    ("不工作", "does not work"),
    ("不正常", "abnormal"),
    ("不对", "wrong"),
    ("过大", "too large"),
    ("过小", "too small"),
    ("太大", "too large"),
    ("太小", "too small"),
    ("变差", "worse"),
    ("很差", "poor"),
    ("问题", "problem"),
    ("解决", "solve"),
    ("为什么", "why"),
    ("什么", "what"),
    ("怎么", "how"),
    ("如何", "how to"),
    ("为啥", "why"),
    ("慢", "slow"),
    ("不行", "does not work"),
    ("出错", "error"),
    ("崩溃", "crashes"),
    ("区别", "difference"),
    // The particle that makes a sentence a yes/no question.
    ("吗", "?"),
    ("没有变化", "no change"),
    ("变化", "change"),
    ("目标检测", "object detection"),
    ("检测", "detection"),
    ("分割", "segmentation"),
    ("分类", "classification"),
    ("扩散", "diffusion"),
    ("采样", "sampling"),
    ("噪声", "noise"),
    ("噪点", "noise"),
    ("强化学习", "reinforcement learning"),
    ("策略", "policy"),
    ("熵", "entropy"),
    ("对齐", "alignment"),
    ("偏好", "preference"),
    ("模板", "template"),
    ("分词器", "tokenizer"),
    ("词表", "vocabulary"),
    ("填充", "padding"),
    ("结束符", "EOS token"),
    ("终止符", "EOS token"),
    ("学习", "learning"),
];

/// The query with glossary terms replaced by their English (padded with spaces), longest term
/// first at each position; the query itself when it holds no character outside ASCII.
pub(super) fn translate(query: &str) -> Cow<'_, str> {
    if query.is_ascii() {
        return Cow::Borrowed(query);
    }
    let mut out = String::with_capacity(query.len() * 2);
    let mut rest = query;
    while let Some(c) = rest.chars().next() {
        let best = TERMS
            .iter()
            .filter(|(t, _)| rest.starts_with(t))
            .max_by_key(|(t, _)| t.len());
        match best {
            Some((t, en)) => {
                out.push(' ');
                out.push_str(en);
                out.push(' ');
                rest = &rest[t.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn chinese_training_terms_read_as_english_longest_first() {
        assert_eq!(translate("loss is nan"), "loss is nan");
        let t = translate("Lora微调灾难性遗忘");
        assert_eq!(
            t.split_whitespace().collect::<Vec<_>>(),
            ["Lora", "fine-tuning", "catastrophic", "forgetting"]
        );
        // "不收敛" is one term, not "不" + "converge".
        assert!(translate("loss不收敛").contains("does not converge"));
        // What the glossary lacks stays.
        assert!(translate("训练报错了").contains('了'));
        // Words of trouble and of asking carry over, so the gate reads a report as one.
        assert!(translate("grad-norm 过大").contains("too large"));
        assert!(translate("没有效果").contains("no effect"));
        assert_eq!(
            translate("为什么loss不下降").split_whitespace().next(),
            Some("why")
        );
        let t = translate("为啥训练的速度这么慢吗");
        assert!(
            t.contains("why") && t.contains("slow") && t.contains('?'),
            "{t}"
        );
    }
}
