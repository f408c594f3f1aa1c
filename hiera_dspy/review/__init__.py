"""What a person sees and decides: confidence, the review queue, decisions, the human sample, labelling runs and their exports."""
