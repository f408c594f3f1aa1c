"""What a person sees and decides: confidence, the review queue, decisions, the human sample; decisions as gold."""
