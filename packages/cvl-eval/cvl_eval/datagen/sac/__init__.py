"""The paper's datasets: SAC trained online, its whole replay buffer written as the dataset (see
`cvl_eval.datagen.sac.generate`)."""
