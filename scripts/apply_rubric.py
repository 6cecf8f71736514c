#!/usr/bin/env python3
"""Apply the docs/LABELS.md rubric to label_figures.py output and write models/real-labels.json.

    python3 scripts/apply_rubric.py ../shared/traces > models/real-labels.json

The gates below are applied mechanically to the measured figures; every place where judgement
replaced the gate is an entry in OVERRIDES (with its reason) so a reviewer can disagree with it.
A value within +-25% of a gate's threshold is left unjudged ("borderline").
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import label_figures as lf  # noqa: E402

IDS = ['dataloader-bottleneck', 'allocator-churn', 'host-device-sync', 'pageable-memcpy', 'host-only-time',
       'launch-bound-small-kernels', 'gpu-low-utilization', 'communication-exposed', 'fp32-without-tensor-cores',
       'layout-transforms', 'unfused-attention', 'heavy-memcpy', 'optimizer-not-fused', 'zero-grad-memset',
       'fusion-candidates']

# Traces labelled (GPU work, PyTorch Kineto) -> workload. Anything else in shared/traces is left out
# (reasons in docs/LABELS.md).
TRACES = {
    'AMD-AGI__TraceLens/tests__traces__b200__eager_trace.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__mi300__Falconsai_nsfw_image_detection__1016002.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz': 'training',
    'AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__mi300__gaunernst_bert-small-uncased__1016001.json.gz': 'inference',
    'AMD-AGI__TraceLens/tests__traces__mi300__resnet_act_checkpoint.json.gz': 'training',
    'AMD-AGI__TraceLens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz': 'benchmark',
    'AMD-AGI__TraceLens/tests__traces__torch_compile_triton__trace.json.gz': 'inference',
    'DarthShoge__Crypto_CNN/trace@v25e69f9.json': 'inference',
    'JeremyMorlier__GPUModel/trace.json': 'benchmark',
    'JeremyMorlier__GPUModel/trace2.json': 'benchmark',
    'JeremyMorlier__GPUModel/trace3.json': 'benchmark',
    'Quentin-Anthony__torch-profiling-tutorial/log__transformer__dc3b0e7228dd_851.1752215573993169006.pt.trace.json': 'inference',
    'deepseek-ai__profile-data/train.json': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__cuda_event_sync__event_sync_trace.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__end_to_end__simple_add__input__trace.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__execution_trace__benchmark_simple_add_trace.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__negative_queue_length_values_check__rank0.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__timeline_analysis__sampled_rank-0.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_compare__test__test.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__control__control.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__test__test.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_file_list__inference_rank_1.json.gz': 'inference',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_filter__sampled_rank-1.json.gz': 'training',
    'facebookresearch__HolisticTraceAnalysis/tests__data__triton_example__triton_example.json.gz': 'benchmark',
    'facebookresearch__HolisticTraceAnalysis/tests__data__with_gpu_user_annotation__step_based_trace_2543932.json.gz': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker1_step_12.1694128201556.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker2_step_12.1694128201554.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker3_step_12.1694128201557.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker4_step_12.1694128201547.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker5_step_12.1694128201549.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker6_step_12.1694128201553.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker7_step_12.1694128201553.pt.trace.json': 'training',
    'facebookresearch__param/et_replay__tests__inputs__linear_kineto.json.gz': 'training',
    'haraldger__High-Performance-Deep-Learning/resnet50_bottleneck_trace.json': 'training',
    'haraldger__High-Performance-Deep-Learning/resnet50_trace.json': 'training',
    'haraldger__High-Performance-Deep-Learning/vgg16_trace.json': 'training',
    'harryjmoss__particle_transformer/profiler_trace_single_sample.json': 'inference',
    'harryjmoss__particle_transformer/run1_chrome_traces__single_epoch_forward_pass_batch_size_2.json': 'inference',
    'harryjmoss__particle_transformer/run1_chrome_traces__single_epoch_forward_pass_batch_size_512.json': 'inference',
    'pytorch__kineto/tb_plugin__test__gpu_metrics_input@v71530b1.json': 'training',
    'warming423__pf/data__aisec-dell-server_2194513.1719226946002.pt.trace.json': 'inference',
}

HEALTHY = {
    'deepseek-ai__profile-data/train.json',
    'AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz',
}

VLLM_FULL = 'AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz'
ALEXNET_COLD = 'warming423__pf/data__aisec-dell-server_2194513.1719226946002.pt.trace.json'
NOTES = {
    VLLM_FULL: 'No ProfilerStep: the window starts at the first launch, ~7.8 ms before the first GPU work (the host '
               'enqueues memcpys and the hipGraphLaunch, the GPU starts later); over the GPU active span it is 99.8% busy.',
    'deepseek-ai__profile-data/train.json': 'Communication is DeepEP custom kernels (no nccl names), overlapped by DualPipe; '
               'busy 99%. The 1.3 ms of cuda::batched_transpose is not a conv layout conversion (no conv kernels).',
    'Quentin-Anthony__torch-profiling-tutorial/log__transformer__dc3b0e7228dd_851.1752215573993169006.pt.trace.json':
        'The catalogue calls this training, but the trace has no backward/autograd/Optimizer ops: forward only '
        '(nn.TransformerEncoderLayer fast path, aten::_native_multi_head_attention), labelled inference.',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_compare__test__test.json.gz':
        'Trimmed two-step fixture (2-3 kernels per step). Its pair base.json has identical GPU activity and is left out '
        'as a duplicate (base.json also lacks the backward ops that make this one recognisably training).',
    ALEXNET_COLD: 'Cold first iteration: a 1.14 s cudaFree at the start of the GPU span (CUDA lazy init) and a 0.22 s one.',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz':
        'PARAM benchmark harness: two cudaFree calls of 6.0 s and 0.5 s in the middle of the GPU span with the GPU idle.',
    'facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__end_to_end__simple_add__input__trace.json.gz':
        'PARAM benchmark harness: two cudaFree calls of 5.2 s and 2.8 s in the middle of the GPU span with the GPU idle.',
    'AMD-AGI__TraceLens/tests__traces__mi300__resnet_act_checkpoint.json.gz':
        'Busy 99%, but ~9.2 ms of each 16 ms step is one RCCL all-reduce kernel with no compute beside it (compute on '
        'stream 0 is ~4 ms per step): the comm kernel time likely includes waiting for slower ranks.',
}
# (trace, id) -> (verdict, reason). verdict in present / absent / unjudged.
# Idle mostly in gaps of 1 ms or more: a GPU that waits milliseconds with nothing queued is
# under-utilized (the host is busy elsewhere), not launch-bound, however short its kernels; the
# detectors split mid-step idle by gap length since session 11 (the second label set's view).
LONG_GAPS = {
    'facebookresearch__HolisticTraceAnalysis/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz':
        'busy 1.7%, gaps up to 6.6 ms between 14 kernels',
    'facebookresearch__HolisticTraceAnalysis/tests__data__execution_trace__benchmark_simple_add_trace.json.gz':
        'busy 0.01%, a 54 ms gap between its 4 kernels',
    'facebookresearch__HolisticTraceAnalysis/tests__data__negative_queue_length_values_check__rank0.json.gz':
        'busy 36%, about half of the active span in gaps of 1 ms or more',
    'facebookresearch__HolisticTraceAnalysis/tests__data__trace_file_list__inference_rank_1.json.gz':
        'busy 1.8%, about 89% of the active span in gaps of 1 ms or more',
}

OVERRIDES = {
    (VLLM_FULL, 'host-device-sync'): (
        'absent', 'judgement: the only sync (hipEventSynchronize) is 8.3 ms before the first GPU work; the idle after it '
                  'is the window lead-in before any GPU work exists, not GPU time lost to a sync (gate figure 3.0%).'),
    ('harryjmoss__particle_transformer/profiler_trace_single_sample.json', 'gpu-low-utilization'): (
        'present', 'judgement: busy 0.8%, unattributed mid-step idle 98.4% of a 1.04 s window, dominated by one 681 ms '
                   'host gap; the small-kernel share (40.8%) is in the borderline band but the idle is not per-launch gaps.'),
    ('harryjmoss__particle_transformer/profiler_trace_single_sample.json', 'launch-bound-small-kernels'): (
        'absent', 'judgement: fewer than half the kernels are < 10 us (40.8%) and the idle is one 681 ms host gap, '
                  'not launch latency between short kernels.'),
    (ALEXNET_COLD, 'allocator-churn'): (
        'unjudged', 'judgement: gate figure 90% of the window, but it is one cold iteration: a 1.14 s cudaFree at the very '
                    'start is CUDA lazy initialisation, then one 0.22 s cudaFree; no steady step can show churn.'),
}


def pct(x):
    return 'n/a' if x is None else '%.1f%%' % (100 * x)


def gate(value, thr):
    """'yes' / 'no' / 'border' for value >= thr with a +-25% borderline band."""
    if value is None:
        return None
    if value >= thr * 1.25:
        return 'yes'
    if value < thr * 0.75:
        return 'no'
    return 'border'


def judge(f, workload):
    m, st, ms = f['median'], f['steady'], f['most_steps']
    n = f['n_steady_steps']
    ctx = '%d steady step(s) of median %.2f ms' % (n, m['step_ms'])
    out = {}

    def put(i, verdict, why):
        out[i] = (verdict, why)

    # dataloader-bottleneck
    i = 'dataloader-bottleneck'
    if workload != 'training':
        put(i, 'absent', '%s trace: no training data pipeline to wait on' % workload)
    elif f['n_dataloader_ranges'] == 0:
        put(i, 'absent', 'no enumerate(DataLoader)#...__next__ ranges in the trace, DataLoader-overlapped idle = 0')
    else:
        g = gate(m['idle_dataloader_frac'], 0.05)
        k, most = ms['dataloader_idle_ge_5pct']
        why = 'GPU idle overlapping DataLoader __next__ = %s of the step (median), >=5%% in %d/%d steps' % (pct(m['idle_dataloader_frac']), k, n)
        put(i, 'present' if g == 'yes' and most else 'unjudged' if g == 'border' else 'absent', why)

    # allocator-churn
    i = 'allocator-churn'
    g = gate(m['idle_alloc_frac'], 0.02)
    k, most = ms['alloc_idle_ge_2pct']
    why = 'GPU idle overlapping malloc/free runtime calls = %s of the step (median; %d alloc/free calls in trace), >=2%% in %d/%d steps' % (
        pct(m['idle_alloc_frac']), f['n_alloc_calls'], k, n)
    put(i, 'present' if g == 'yes' and most else 'unjudged' if g == 'border' else 'absent', why)

    # host-device-sync
    i = 'host-device-sync'
    g = gate(m['idle_after_sync_frac'], 0.02)
    k, most = ms['sync_idle_ge_2pct']
    why = 'GPU idle within 1 ms after synchronizing calls (%s) = %s of the step (median), >=2%% in %d/%d steps' % (
        ', '.join(f['sync_call_names']) or 'none', pct(m['idle_after_sync_frac']), k, n)
    verdict = 'present' if g == 'yes' and most else 'unjudged' if g == 'border' else 'absent'
    # refinement 4: the 1 ms window only blames the sync if the GPU idles more inside sync windows than elsewhere;
    # on a GPU starved everywhere (launch-bound) the window just collects launch gaps
    w = m['sync_window_frac'] or 0.0
    if verdict == 'present' and w > 0:
        din = m['idle_after_sync_frac'] / w
        dout = max(0.0, 1 - m['busy_frac'] - m['idle_after_sync_frac']) / max(1e-9, 1 - w)
        why += '; idle density inside sync windows %.2f vs elsewhere %.2f' % (din, dout)
        if din - dout < 0.10 and dout >= 0.6:
            verdict = 'unjudged'
            why = 'starved GPU, cannot separate sync cost from launch gaps: ' + why
    put(i, verdict, why)

    # pageable-memcpy
    i = 'pageable-memcpy'
    k, most = ms['pageable_ge_1pct_or_1MB']
    why = 'pageable copies per step (median) = %s, %s bytes, %s of the step; gate met in %d/%d steps' % (
        m['pageable_copies'], m['pageable_bytes'], pct(m['pageable_frac']), k, n)
    border = (m['pageable_copies'] or 0) > 0 and (gate(m['pageable_frac'], 0.01) == 'border' or gate(m['pageable_bytes'], 1 << 20) == 'border')
    put(i, 'present' if most and not border else 'unjudged' if border else 'absent', why)

    # host-only-time
    i = 'host-only-time'
    if not f['has_profiler_steps']:
        put(i, 'absent', 'no ProfilerStep ranges: the rule needs real step boundaries (window is the GPU active span)')
    elif (m['n_kernels'] or 0) < 10:
        # Few kernels is not an absence: the rubric's figures do not judge such steps.
        put(i, 'unjudged', 'only %s kernels per step (<10): the rubric does not judge it' % m['n_kernels'])
    else:
        g = gate(m['edge_idle_minus_dataloader_frac'], 0.25)
        k, most = ms['edge_idle_minus_dl_ge_25pct']
        why = 'idle before first + after last GPU work minus DataLoader = %s of the step (median), >=25%% in %d/%d steps' % (
            pct(m['edge_idle_minus_dataloader_frac']), k, n)
        put(i, 'present' if g == 'yes' and most else 'unjudged' if g == 'border' else 'absent', why)

    small = st['small_kernel_share']
    midu = m['mid_idle_unattributed_frac']
    busy = m['busy_frac']
    base = 'kernels <10us = %s, mid-step idle not overlapping DataLoader/alloc/sync = %s, busy = %s (%s)' % (pct(small), pct(midu), pct(busy), ctx)
    # launch-bound-small-kernels
    i = 'launch-bound-small-kernels'
    g1, g2 = gate(small, 0.5), gate(midu, 0.10)
    if g1 == 'no' or g2 == 'no':
        put(i, 'absent', base)
    elif g1 == 'yes' and g2 == 'yes':
        put(i, 'present', base)
    else:
        put(i, 'unjudged', 'borderline: ' + base)
    # gpu-low-utilization
    i = 'gpu-low-utilization'
    if busy >= 0.8:
        put(i, 'absent', 'GPU busy >= 80%: ' + base)
    elif g1 == 'yes':
        put(i, 'absent', 'kernels mostly short (launch-bound, not low utilisation): ' + base)
    else:
        g = gate(midu, 0.20)
        if g == 'yes' and g1 == 'no':
            put(i, 'present', base)
        elif g == 'no':
            put(i, 'absent', base)
        else:
            put(i, 'unjudged', 'borderline: ' + base)

    # communication-exposed
    i = 'communication-exposed'
    why = 'collective kernels (%d in trace) = %s of the step, not overlapped by compute on other streams = %s' % (
        f['n_collective_kernels'], pct(m['collective_frac']), pct(m['collective_exposed_frac']))
    g1, g2 = gate(m['collective_frac'], 0.10), gate(m['collective_exposed_frac'], 0.05)
    put(i, 'absent' if 'no' in (g1, g2) else 'present' if (g1, g2) == ('yes', 'yes') else 'unjudged', why)

    # fp32-without-tensor-cores
    i = 'fp32-without-tensor-cores'
    why = 'SIMT fp32 GEMM/conv = %s of kernel time; device %r computeMajor %s, tensor cores %s' % (
        pct(st['simt_fp32_share']), f['device_name'], f['compute_major'], f['tensor_cores'])
    if f['tensor_cores'] is None:
        put(i, 'unjudged', 'no usable deviceProperties: ' + why)
    elif f['tensor_cores'] is False:
        put(i, 'absent', 'GPU has no tensor cores: ' + why)
    else:
        g = gate(st['simt_fp32_share'], 0.10)
        put(i, {'yes': 'present', 'no': 'absent', 'border': 'unjudged', None: 'absent'}[g], why)

    # layout-transforms
    i = 'layout-transforms'
    why = 'layout kernels = %s of conv kernel time and %s of the step' % (pct(st['layout_over_conv']), pct(m['layout_frac_of_step']))
    if not m['layout_ms'] and not st['layout_over_conv']:
        put(i, 'absent', 'no layout-conversion kernels (' + why + ')')
    elif not m['conv_ms']:
        put(i, 'absent', 'no convolution kernels, so transposes are not NCHW/NHWC conv layout conversions (' + why + ')')
    else:
        g1 = gate(st['layout_over_conv'] if st['layout_over_conv'] is not None else 1.0, 0.05)
        g2 = gate(m['layout_frac_of_step'], 0.01)
        put(i, 'absent' if 'no' in (g1, g2) else 'present' if (g1, g2) == ('yes', 'yes') else 'unjudged', why)

    # unfused-attention
    i = 'unfused-attention'
    fused = f['fused_attention_ops'] + f['fused_attention_kernels']
    k, most = ms['attn_pattern']
    if fused:
        put(i, 'absent', 'fused attention in trace (%s); mm-softmax-mm CPU patterns = %d' % (', '.join(fused[:2]), f['attn_cpu_patterns_total']))
    elif f['n_cpu_ops'] > 0:
        why = 'mm/bmm -> softmax -> mm/bmm sibling patterns = %d in trace, in %d/%d steps; no fused attention op/kernel' % (
            f['attn_cpu_patterns_total'], k, n)
        put(i, 'present' if most and f['attn_cpu_patterns_total'] > 0 else 'absent', why)
    else:
        why = 'no CPU ops; GEMM->softmax->GEMM kernel sequences = %d; no fused attention kernel' % f['attn_kernel_sequences_total']
        put(i, 'present' if f['attn_kernel_sequences_total'] > 0 else 'absent', why)

    # heavy-memcpy
    i = 'heavy-memcpy'
    g = gate(m['memcpy_frac'], 0.05)
    put(i, {'yes': 'present', 'no': 'absent', 'border': 'unjudged'}[g], 'GPU copy time (all directions) = %s of the step (median)' % pct(m['memcpy_frac']))

    # optimizer-not-fused / zero-grad-memset
    opt = [o for p in f['steps'] for o in p['optimizer_steps']]
    for i in ('optimizer-not-fused', 'zero-grad-memset'):
        if workload != 'training':
            put(i, 'absent', '%s trace' % workload)
    if workload == 'training':
        i = 'optimizer-not-fused'
        if not opt:
            put(i, 'absent', 'no Optimizer.step range in the steady steps')
        else:
            mk = lf.med([o['kernels'] for o in opt])
            fe = sum(1 for o in opt if o['foreach_or_fused'])
            why = 'Optimizer.step launches median %s kernels per call; %d/%d calls contain _foreach_/_fused_ ops' % (mk, fe, len(opt))
            g = gate(mk, 50)
            if fe * 2 >= len(opt):
                put(i, 'absent', why)
            else:
                put(i, {'yes': 'present', 'no': 'absent', 'border': 'unjudged'}[g], why)
        i = 'zero-grad-memset'
        k, most = ms['zero_grad_fill']
        if f['n_zero_grad_ranges'] == 0:
            put(i, 'absent', 'no Optimizer.zero_grad range')
        else:
            zs = [z for p in f['steps'] for z in p['zero_grad_fill_launches']]
            put(i, 'present' if most else 'absent',
                'Optimizer.zero_grad fill/memset launches per call: %s (steps with any: %d/%d)' % (sorted(set(zs)), k, n))

    # fusion-candidates
    i = 'fusion-candidates'
    g = gate(m['elementwise_chain_kernel_share'], 0.10)
    put(i, {'yes': 'present', 'no': 'absent', 'border': 'unjudged'}[g],
        'element-wise chains (>=4 kernels <20us back to back: <=10us apart, or launched by one op or the next op) = %s of the step\'s kernel time (median)' % pct(m['elementwise_chain_kernel_share']))
    return out


def key_figures(f):
    m, st = f['median'], f['steady']
    keep = ['step_ms', 'busy_frac', 'mid_idle_frac', 'mid_idle_unattributed_frac', 'idle_before_frac', 'idle_after_frac',
            'edge_idle_minus_dataloader_frac', 'idle_dataloader_frac', 'idle_alloc_frac', 'idle_after_sync_frac',
            'n_kernels', 'pageable_copies', 'pageable_bytes', 'pageable_frac', 'memcpy_frac', 'collective_frac',
            'collective_exposed_frac', 'elementwise_chain_kernel_share', 'layout_frac_of_step']
    out = {'median_' + k: m[k] for k in keep}
    out.update({
        'n_steady_steps': f['n_steady_steps'], 'profiler_steps': f['has_profiler_steps'], 'warmup_dropped': f['warmup_dropped'],
        'main_device': f['main_device'], 'device_name': f['device_name'], 'tensor_cores': f['tensor_cores'],
        'small_kernel_share': st['small_kernel_share'], 'simt_fp32_share': st['simt_fp32_share'],
        'layout_over_conv': st['layout_over_conv'], 'training_markers': bool(f['training_markers']),
        'attn_cpu_patterns': f['attn_cpu_patterns_total'], 'attn_kernel_sequences': f['attn_kernel_sequences_total'],
        'fused_attention': bool(f['fused_attention_ops'] or f['fused_attention_kernels']),
        'n_collective_kernels': f['n_collective_kernels'], 'n_alloc_calls': f['n_alloc_calls'],
        'optimizer_kernels_per_call': lf.med([o['kernels'] for p in f['steps'] for o in p['optimizer_steps']]),
    })
    return out


def main():
    root = sys.argv[1]
    traces = []
    for t, workload in TRACES.items():
        f = lf.measure(os.path.join(root, t))
        verdicts = judge(f, workload)
        if t in LONG_GAPS:
            why = 'judgement: %s; the idle is the host busy elsewhere, not launch latency' % LONG_GAPS[t]
            verdicts['gpu-low-utilization'] = ('present', why)
            verdicts['launch-bound-small-kernels'] = ('unjudged', why)
        for (tt, i), v in OVERRIDES.items():
            if tt == t:
                verdicts[i] = v
        # healthy: a mandated control, or busy >= 95% with every id judged absent
        healthy = t in HEALTHY or (f['median']['busy_frac'] >= 0.95 and all(v == 'absent' for v, _ in verdicts.values()))
        if healthy:
            bad = [i for i, (v, _) in verdicts.items() if v != 'absent']
            if bad:
                sys.stderr.write('healthy control %s has non-absent %s\n' % (t, bad))
        e = {'trace': t, 'workload': workload, 'healthy_control': healthy, 'figures': key_figures(f),
             'present': {i: w for i, (v, w) in verdicts.items() if v == 'present'},
             'absent': {i: w for i, (v, w) in verdicts.items() if v == 'absent'},
             'unjudged': {i: w for i, (v, w) in verdicts.items() if v == 'unjudged'}}
        if t in NOTES:
            e['note'] = NOTES[t]
        traces.append(e)
    json.dump({'format': 'torchtraceap.real-labels', 'version': 1, 'rubric': 'docs/LABELS.md', 'traces': traces},
              sys.stdout, indent=1)
    print()


if __name__ == '__main__':
    main()
