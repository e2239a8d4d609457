# Sampling tasks, building agent images, a canary trial per agent, running trials, scoring
# them with the reference scorer and (the `judge` stage) with the LLM judge. A shard is
# agent × resource profile × variant × trial block × task chunk (the neutral variant, the
# only one without `variants`, adds nothing to the file names); its journal
# (results/trials/<agent>/<resource profile>/journals/, never a Snakemake output) survives
# reruns, so a rerun job resumes instead of repeating paid-for trials.


# A shard depends on its own task rows, not on the whole table's date: adding a task reruns
# the grown chunk's shards only (evalnoise.pipeline.shard_plan.task_rows_digest).


rule sample_tasks:
    output:
        tasks="results/tasks.parquet",
    log:
        "results/logs/sample_tasks.log",
    params:
        benchmark=config["benchmark"],
        code_version=code_version("tasks"),
    run:
        in_process("../scripts/sample_tasks.py", locals())


rule build_image:
    input:
        files=image_inputs,
    output:
        info="results/trials/{agent}/image.json",
    log:
        "results/logs/build_image/{agent}.log",
    # before every block's shards: no group's later block waits behind another's canary
    priority: pipeline_settings.setup_priority(RUN.plan.blocks)
    conda:
        ENV
    params:
        image=RUN.image_params,
        code_version=code_version("images"),
    script:
        "../scripts/build_image.py"


rule canary:
    input:
        tasks=WIRING.tasks_table,
        image=unconstrained(rules.build_image.output.info),
    output:
        canary="results/trials/{agent}/canary.json",
    log:
        "results/logs/canary/{agent}.log",
    # before every block's shards: no group's later block waits behind another's canary
    priority: pipeline_settings.setup_priority(RUN.plan.blocks)
    # a verdict, not a transient fault: the profile's retries would only repeat it
    retries: 0
    conda:
        ENV
    resources:
        model_server=RUN.agent_server_tokens,
    params:
        agent=RUN.agent_param,
        resource_profile=RUN.canary_profile_param,
        run_seed=config["run_seed"],
        backend=config["backend"],
        server=RUN.agent_server,
        machine=RUN.machine_param,
        reward_key=config["benchmark"]["reward"],
        network=RUN.network_param,
        code_version=code_version("runner"),
    script:
        "../scripts/canary.py"


rule run_trials:
    input:
        tasks=lambda wildcards: ancient(WIRING.tasks_table()),
        image=unconstrained(rules.build_image.output.info),
        canary=canary_input,
    output:
        shard="results/trials/{agent}/{resource_profile}/t{block}/c{chunk}{variant}.parquet",
        # the trials' actions (evalnoise.runner.actions), beside the journals
        actions="results/trials/{agent}/{resource_profile}/actions/t{block}/c{chunk}{variant}.parquet",
    log:
        "results/logs/run_trials/{agent}/{resource_profile}/t{block}-c{chunk}{variant}.log",
    # the trial block is the time block: earlier blocks first, longer shards first within
    # a block (docs/pipeline.md)
    priority: RUN.shard_priority
    conda:
        ENV
    # trials at once in the job: one, so 2 cores run two jobs, each with its own one-thread
    # model server (profiles/default); the cluster profiles raise it with set-threads
    threads: 1
    resources:
        model_server=RUN.agent_server_tokens,
        cpus_per_task=RUN.run_trials_cpus,
        mem_mb=RUN.run_trials_mem_mb,
        runtime=RUN.run_trials_runtime,
    params:
        **RUN.variant_params(),
        agent=RUN.agent_param,
        resource_profile=RUN.resource_profile_param,
        trials=RUN.trials_param,
        rows=RUN.rows_param,
        run_seed=config["run_seed"],
        infra_policy=RUN.infra_policy_param,
        backend=config["backend"],
        journal=RUN.journal_param,
        task_rows=RUN.task_rows_param,
        server=RUN.agent_server,
        reward_key=config["benchmark"]["reward"],
        network=RUN.network_param,
        tampered_environment=config["benchmark"]["tampered_environment"],
        unverified_reruns=WIRING.verifier_reruns,
        code_version=code_version("runner"),
    script:
        "../scripts/run_trials.py"


rule score:
    input:
        trials=unconstrained(rules.run_trials.output.shard),
        tasks=lambda wildcards: ancient(WIRING.tasks_table()),
    output:
        scores="results/scores/{agent}/{resource_profile}/t{block}/c{chunk}{variant}.parquet",
    log:
        "results/logs/score/{agent}/{resource_profile}/t{block}-c{chunk}{variant}.log",
    # as its trials: a finished block is scored before later blocks' trials run
    priority: RUN.shard_priority
    resources:
        model_server=RUN.scorer_server_tokens,
    params:
        scorer=config["scorer"],
        server=RUN.scorer_server,
        judge_cache=JUDGE_CACHE,
        template_hash=RUN.judge_template_hash,
        task_rows=RUN.task_rows_param,
        unjudged_reruns=WIRING.score_reruns,
        code_version=code_version("scorers"),
    run:
        in_process("../scripts/score.py", locals())


# One job per judge of scorer.judge.judges and trial shard: adding a judge runs its jobs only.
rule judge:
    input:
        trials=unconstrained(rules.run_trials.output.shard),
        tasks=lambda wildcards: ancient(WIRING.tasks_table()),
    output:
        judged="results/judged/{judge}/{agent}/{resource_profile}/t{block}/c{chunk}{variant}.parquet",
    log:
        "results/logs/judge/{judge}/{agent}/{resource_profile}/t{block}-c{chunk}{variant}.log",
    # as its trials: a finished block is judged before later blocks' trials run
    priority: RUN.shard_priority
    resources:
        model_server=RUN.judge_server_tokens,
    params:
        scorer=RUN.judge_scorer_param,
        server=RUN.judge_server,
        judge_cache=JUDGE_CACHE,
        template_hash=RUN.judge_template_hash,
        task_rows=RUN.task_rows_param,
        unjudged_reruns=WIRING.judge_reruns,
        code_version=code_version("scorers"),
    run:
        in_process("../scripts/score.py", locals())
