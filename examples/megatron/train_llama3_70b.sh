#!/bin/bash
# A Megatron-LM launch of Llama 3 70B on 8 nodes of 8 H100 (pretrain_gpt.py), as a user would
# write it: variables, bash arrays, continuation lines. `commwall megatron` reads its flags;
# examples/llama3-70b-megatron-args-h100.yaml runs it as a scenario.
TP=8
PP=4
SEQ_LEN=${SEQ_LEN:-8192}

MODEL_ARGS=(
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length ${SEQ_LEN}
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --attention-dropout 0.0
    --hidden-dropout 0.0
    --tokenizer-type NullTokenizer
    --vocab-size 128256
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
    --num-layers-per-virtual-pipeline-stage 5
    --sequence-parallel
    --tp-comm-overlap
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --bf16
    --grad-reduce-in-bf16
    --recompute-activations
    --cross-entropy-loss-fusion
    --no-check-for-nan-in-loss-and-grad
    --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine
    --weight-decay 0.1 --clip-grad 1.0
    --train-iters 100000 --log-interval 10
)

torchrun --nproc-per-node 8 --nnodes 8 pretrain_gpt.py \
    "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" \
    --mock-data --save /checkpoints/llama3-70b
